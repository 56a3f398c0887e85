/**
 * Text helpers for hook events: what the user and the model said, without the blocks the
 * plugin or OpenClaw added. Pure functions; nothing here talks to MUMA.
 */
import { createHash } from "node:crypto";

/** The block /v1/context returns; removed from anything we capture. */
const MEMORY_BLOCK_RE = /<relevant-memories\b[^>]*>[\s\S]*?<\/relevant-memories>/gi;
/** OpenClaw's own internal-context user message (not something the user said). */
const OPENCLAW_INTERNAL_RE = /<<<BEGIN_OPENCLAW_INTERNAL_CONTEXT>>>[\s\S]*?(?:<<<END_OPENCLAW_INTERNAL_CONTEXT>>>|$)/g;

/** Remove our injected memory block (the exact one, then any) and OpenClaw's internal block. */
export function stripInjected(text: string, exact?: string): string {
  let out = text;
  if (exact && exact.trim()) out = out.split(exact).join("");
  out = out.replace(MEMORY_BLOCK_RE, "").replace(OPENCLAW_INTERNAL_RE, "");
  return out.replace(/\n{3,}/g, "\n\n").trim();
}

/** OpenClaw's timestamp envelope in front of a prompt: `[Mon 2026-11-30 07:52 UTC] `. */
const TIMESTAMP_ENVELOPE_RE = /^\[[A-Z][a-z]{2} \d{4}-\d{2}-\d{2} \d{2}:\d{2}(?::\d{2})?(?: [A-Za-z0-9+:\/_-]+)?\]\s*/;

/** The user's words from llm_input's prompt: our block and OpenClaw's envelope removed. */
export function userTextFromPrompt(prompt: string, exact?: string): string {
  return stripInjected(stripInjected(prompt, exact).replace(TIMESTAMP_ENVELOPE_RE, ""));
}

/** Plain text of an agent message content (string or content parts). */
export function messageText(content: unknown): string {
  if (typeof content === "string") return content;
  if (Array.isArray(content)) {
    return content
      .map((part) => {
        if (typeof part === "string") return part;
        if (part && typeof part === "object" && (part as { type?: unknown }).type === "text") {
          const t = (part as { text?: unknown }).text;
          return typeof t === "string" ? t : "";
        }
        return "";
      })
      .filter(Boolean)
      .join("\n");
  }
  if (content && typeof content === "object") {
    const c = content as { content?: unknown; text?: unknown };
    if (typeof c.text === "string") return c.text;
    if (c.content !== undefined) return messageText(c.content);
  }
  return "";
}

/** Any value as text: strings as they are, the rest as JSON (or String() if that fails). */
export function safeJson(value: unknown): string {
  if (value === undefined) return "";
  if (typeof value === "string") return value;
  try {
    return JSON.stringify(value) ?? "";
  } catch {
    return String(value);
  }
}

/** Short stable digest, for idempotency keys built from content. */
export function sha(text: string): string {
  return createHash("sha256").update(text).digest("hex").slice(0, 24);
}

/** The value if it is a non-blank string, else undefined. */
export function str(value: unknown): string | undefined {
  return typeof value === "string" && value.trim() !== "" ? value : undefined;
}
