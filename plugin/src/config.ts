/**
 * Plugin configuration: `plugins.entries.muma.config` in openclaw.json.
 *
 * OpenClaw validates the user's config against `configSchema` in openclaw.plugin.json (the
 * single source of truth, defaults included) before the plugin loads. `resolveConfig` applies
 * the same defaults again so the plugin also behaves when handed a raw object (tests, older
 * hosts), and never throws: bad values fall back to defaults with a list of problems.
 */
import { readFileSync } from "node:fs";

export interface MumaConfig {
  serviceUrl: string;
  token: string | undefined;
  tenantId: string | undefined;
  defaultUserId: string | undefined;
  timeoutMs: number;
  toolTimeoutMs: number;
  maxTopK: number;
  autoRecall: boolean;
  autoCapture: boolean;
  captureToolResults: boolean;
  /** Where unsent captures are kept across processes (default: OpenClaw's state dir). */
  spoolDir: string | undefined;
}

export const DEFAULTS: Readonly<MumaConfig> = Object.freeze({
  serviceUrl: "http://127.0.0.1:8787",
  token: undefined,
  tenantId: undefined,
  defaultUserId: undefined,
  timeoutMs: 150,
  toolTimeoutMs: 5000,
  maxTopK: 8,
  autoRecall: true,
  autoCapture: true,
  captureToolResults: true,
  spoolDir: undefined,
});

const KNOWN_KEYS = new Set(Object.keys(DEFAULTS));

export interface ResolvedConfig {
  config: MumaConfig;
  problems: string[];
}

function str(value: unknown, key: string, problems: string[]): string | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value !== "string") {
    problems.push(`${key} must be a string`);
    return undefined;
  }
  const trimmed = value.trim();
  return trimmed === "" ? undefined : trimmed;
}

function int(value: unknown, key: string, min: number, max: number, problems: string[]): number | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value !== "number" || !Number.isFinite(value) || !Number.isInteger(value) || value < min || value > max) {
    problems.push(`${key} must be an integer in [${min}, ${max}]`);
    return undefined;
  }
  return value;
}

function bool(value: unknown, key: string, problems: string[]): boolean | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value !== "boolean") {
    problems.push(`${key} must be a boolean`);
    return undefined;
  }
  return value;
}

export function resolveConfig(raw: unknown): ResolvedConfig {
  const problems: string[] = [];
  const obj: Record<string, unknown> =
    raw && typeof raw === "object" && !Array.isArray(raw) ? (raw as Record<string, unknown>) : {};
  if (raw !== undefined && raw !== null && obj !== raw) problems.push("config must be an object");
  for (const key of Object.keys(obj)) {
    if (!KNOWN_KEYS.has(key)) problems.push(`unknown key ${key}`);
  }
  let serviceUrl = str(obj.serviceUrl, "serviceUrl", problems) ?? DEFAULTS.serviceUrl;
  try {
    const url = new URL(serviceUrl);
    if (url.protocol !== "http:" && url.protocol !== "https:") throw new Error("protocol");
  } catch {
    problems.push(`serviceUrl is not an http(s) URL: ${serviceUrl}`);
    serviceUrl = DEFAULTS.serviceUrl;
  }
  serviceUrl = serviceUrl.replace(/\/+$/, "");
  const config: MumaConfig = {
    serviceUrl,
    token: str(obj.token, "token", problems),
    tenantId: str(obj.tenantId, "tenantId", problems),
    defaultUserId: str(obj.defaultUserId, "defaultUserId", problems),
    timeoutMs: int(obj.timeoutMs, "timeoutMs", 10, 60_000, problems) ?? DEFAULTS.timeoutMs,
    toolTimeoutMs: int(obj.toolTimeoutMs, "toolTimeoutMs", 50, 120_000, problems) ?? DEFAULTS.toolTimeoutMs,
    maxTopK: int(obj.maxTopK, "maxTopK", 1, 50, problems) ?? DEFAULTS.maxTopK,
    autoRecall: bool(obj.autoRecall, "autoRecall", problems) ?? DEFAULTS.autoRecall,
    autoCapture: bool(obj.autoCapture, "autoCapture", problems) ?? DEFAULTS.autoCapture,
    captureToolResults: bool(obj.captureToolResults, "captureToolResults", problems) ?? DEFAULTS.captureToolResults,
    spoolDir: str(obj.spoolDir, "spoolDir", problems),
  };
  return { config, problems };
}

/**
 * Why the configured token cannot be used, or undefined when it can. OpenClaw leaves a
 * `${VAR}` whose variable is unset as that literal text; sent as a token, it came back as
 * "invalid or revoked token", which sent users looking at the service instead of their
 * environment.
 */
export function tokenProblem(token: string | undefined): string | undefined {
  if (!token) return "MUMA token is not configured (plugins.entries.muma.config.token)";
  const unresolved = /^\$\{([A-Za-z_][A-Za-z0-9_]*)\}$/.exec(token.trim());
  if (unresolved) {
    return `MUMA token is not set: the plugin config's token is ${token.trim()} and ${unresolved[1]} is not set in the gateway's environment`;
  }
  return undefined;
}

let manifestSchema: unknown;

/** The JSON Schema from openclaw.plugin.json (read lazily, once). */
export function manifestConfigSchema(): unknown {
  if (manifestSchema === undefined) {
    try {
      const manifest = JSON.parse(readFileSync(new URL("../openclaw.plugin.json", import.meta.url), "utf8")) as {
        configSchema?: unknown;
      };
      manifestSchema = manifest.configSchema ?? { type: "object" };
    } catch {
      manifestSchema = { type: "object" };
    }
  }
  return manifestSchema;
}
