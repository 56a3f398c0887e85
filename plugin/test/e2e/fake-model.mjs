// A fake OpenAI-compatible model server (POST /v1/chat/completions, SSE or JSON).
//
// It records every request and answers deterministically:
//   - after a tool result for memory_query → a final text built from that result;
//   - a question "What is my dog called?" → a tool call memory_query {"query": "dog name"};
//   - "Read <file>." → a tool call of OpenClaw's own `read` tool for that workspace file;
//   - "Search memory for <query>." → a tool call memory_query {"query": <query>};
//   - anything else → a short acknowledgement.
import http from "node:http";

const INTERNAL = "<<<BEGIN_OPENCLAW_INTERNAL_CONTEXT>>>";

export function textOf(content) {
  if (typeof content === "string") return content;
  if (Array.isArray(content)) return content.map((p) => (typeof p === "string" ? p : p?.text ?? "")).join("\n");
  return "";
}

/** The real user message of a request (OpenClaw appends an internal-context user message). */
export function lastUserText(messages) {
  for (let i = messages.length - 1; i >= 0; i--) {
    const m = messages[i];
    if (m.role !== "user") continue;
    const t = textOf(m.content);
    if (t.trimStart().startsWith(INTERNAL)) continue;
    return t;
  }
  return "";
}

function decide(body) {
  const messages = Array.isArray(body.messages) ? body.messages : [];
  // Tool results after the last real user message?
  let lastUser = -1;
  for (let i = messages.length - 1; i >= 0; i--) {
    if (messages[i].role === "user" && !textOf(messages[i].content).trimStart().startsWith(INTERNAL)) {
      lastUser = i;
      break;
    }
  }
  const toolMsgs = messages.slice(lastUser + 1).filter((m) => m.role === "tool");
  if (toolMsgs.length) {
    const result = toolMsgs.map((m) => textOf(m.content)).join("\n");
    const match = result.match(/called ([A-Z][a-z]+)/);
    if (!match && /port \d+/.test(result)) return { text: "I have read the file." };
    return { text: match ? `Your dog is called ${match[1]}.` : "I don't know what your dog is called." };
  }
  const user = lastUserText(messages);
  // On a line of its own: the recalled block may precede it (and name the dog); with no
  // block, OpenClaw's timestamp does ("[Mon 2026-12-07 03:27 UTC] Read billing.txt.").
  const file = user.match(/^(?:\[[^\]\n]*\]\s*)?Read ([\w.-]+)\.$/m);
  if (file) {
    // OpenClaw's own `read` tool: its first required parameter names the file.
    const read = (Array.isArray(body.tools) ? body.tools : []).find((t) => (t.function?.name ?? t.name) === "read");
    if (!read) return { text: "I cannot read files." };
    const key = (read.function?.parameters ?? read.parameters)?.required?.[0] ?? "path";
    return { toolCall: { name: "read", arguments: JSON.stringify({ [key]: file[1] }) } };
  }
  // Not anchored at the line start: OpenClaw may put a timestamp before the message.
  const search = user.match(/Search memory for (.+)\.$/m);
  if (search) return { toolCall: { name: "memory_query", arguments: JSON.stringify({ query: search[1] }) } };
  if (/what is my dog called\?/i.test(user)) {
    const tools = Array.isArray(body.tools) ? body.tools.map((t) => t.function?.name ?? t.name) : [];
    if (tools.includes("memory_query")) return { toolCall: { name: "memory_query", arguments: JSON.stringify({ query: "dog name" }) } };
    return { text: "I cannot search memory." };
  }
  return { text: "Nice to meet you! I'll remember that." };
}

export async function startFakeModel() {
  const requests = [];
  let n = 0;
  const server = http.createServer((req, res) => {
    let raw = "";
    req.on("data", (c) => (raw += c));
    req.on("end", () => {
      if (req.method !== "POST" || !req.url?.endsWith("/chat/completions")) {
        res.writeHead(404, { "content-type": "application/json" });
        res.end(JSON.stringify({ error: { message: `no route ${req.method} ${req.url}` } }));
        return;
      }
      let body;
      try {
        body = JSON.parse(raw);
      } catch {
        res.writeHead(400);
        res.end();
        return;
      }
      const answer = decide(body);
      requests.push({ at: Date.now(), body, answer });
      const id = `chatcmpl-fake-${++n}`;
      const created = Math.floor(Date.now() / 1000);
      const model = body.model ?? "fake-1";
      const usage = { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15 };
      const toolCall = answer.toolCall
        ? { index: 0, id: `call_${n}`, type: "function", function: { name: answer.toolCall.name, arguments: answer.toolCall.arguments } }
        : undefined;
      if (body.stream) {
        res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache", connection: "keep-alive" });
        const chunk = (delta, finish) =>
          res.write(
            `data: ${JSON.stringify({ id, object: "chat.completion.chunk", created, model, choices: [{ index: 0, delta, finish_reason: finish ?? null }] })}\n\n`,
          );
        chunk({ role: "assistant", content: "" });
        if (toolCall) {
          chunk({ tool_calls: [toolCall] });
          chunk({}, "tool_calls");
        } else {
          chunk({ content: answer.text });
          chunk({}, "stop");
        }
        res.write(`data: ${JSON.stringify({ id, object: "chat.completion.chunk", created, model, choices: [], usage })}\n\n`);
        res.write("data: [DONE]\n\n");
        res.end();
      } else {
        const message = toolCall
          ? { role: "assistant", content: null, tool_calls: [{ id: toolCall.id, type: "function", function: toolCall.function }] }
          : { role: "assistant", content: answer.text };
        res.writeHead(200, { "content-type": "application/json" });
        res.end(
          JSON.stringify({
            id,
            object: "chat.completion",
            created,
            model,
            choices: [{ index: 0, message, finish_reason: toolCall ? "tool_calls" : "stop" }],
            usage,
          }),
        );
      }
    });
  });
  await new Promise((r) => server.listen(0, "127.0.0.1", r));
  const { port } = server.address();
  return {
    url: `http://127.0.0.1:${port}/v1`,
    requests,
    close: () =>
      new Promise((r) => {
        server.closeAllConnections?.();
        server.close(() => r());
      }),
  };
}
