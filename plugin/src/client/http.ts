/**
 * HTTP core of the MUMA client: one `request()` and the error it throws.
 *
 * - Every request has a hard timeout enforced with an AbortController (the body read is
 *   covered too), so nothing waits on MUMA longer than its budget.
 * - It throws `MumaError` with a `kind` (unreachable | timeout | http | invalid_response
 *   | not_configured | aborted), never anything else.
 * - No connection is opened until the first request.
 */
import { type MumaConfig, tokenProblem } from "../config.js";

export type MumaErrorKind = "unreachable" | "timeout" | "http" | "invalid_response" | "not_configured" | "aborted";

export class MumaError extends Error {
  readonly kind: MumaErrorKind;
  readonly status: number | undefined;
  readonly errorClass: string | undefined;
  readonly detail: string | undefined;

  constructor(
    kind: MumaErrorKind,
    message: string,
    extra: { status?: number; errorClass?: string; detail?: string; cause?: unknown } = {},
  ) {
    super(message, extra.cause === undefined ? undefined : { cause: extra.cause });
    this.name = "MumaError";
    this.kind = kind;
    this.status = extra.status;
    this.errorClass = extra.errorClass;
    this.detail = extra.detail;
  }
}

/** Short human description of any error (for log lines and tool text). */
export function describeError(err: unknown): string {
  if (err instanceof MumaError) return err.message;
  if (err instanceof Error) return err.message;
  return String(err);
}

export interface RequestOptions {
  body?: unknown;
  query?: Record<string, string | number | boolean | undefined>;
  timeoutMs: number;
  signal?: AbortSignal | undefined;
  /** Return the raw response text instead of parsing JSON. */
  text?: boolean;
  /** Send no Authorization header (only /healthz). */
  noAuth?: boolean;
}

/** An abort signal that fires at the timeout or with the caller's signal, whichever is first. */
interface Deadline {
  signal: AbortSignal;
  timedOut: () => boolean;
  /** Stop the timer and detach from the caller's signal (always, once the request is over). */
  dispose: () => void;
}

function startDeadline(timeoutMs: number, outer: AbortSignal | undefined): Deadline {
  const controller = new AbortController();
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    controller.abort();
  }, Math.max(1, timeoutMs));
  timer.unref?.();
  const onOuterAbort = () => controller.abort();
  if (outer) {
    if (outer.aborted) controller.abort();
    else outer.addEventListener("abort", onOuterAbort, { once: true });
  }
  return {
    signal: controller.signal,
    timedOut: () => timedOut,
    dispose: () => {
      clearTimeout(timer);
      outer?.removeEventListener("abort", onOuterAbort);
    },
  };
}

/** Send the request and read the whole body; a failure of either becomes `fail(err)`. */
async function fetchText(url: URL, init: RequestInit, fail: (err: unknown) => MumaError): Promise<{ response: Response; text: string }> {
  let response: Response;
  try {
    response = await fetch(url, init);
  } catch (err) {
    throw fail(err);
  }
  try {
    return { response, text: await response.text() };
  } catch (err) {
    throw fail(err);
  }
}

/** The error for a non-2xx response, with the service's error class and detail when it sent JSON. */
function httpError(status: number, text: string, where: string): MumaError {
  let errorClass: string | undefined;
  let detail: string | undefined;
  try {
    const parsed = JSON.parse(text) as { error?: unknown; detail?: unknown };
    if (typeof parsed.error === "string") errorClass = parsed.error;
    if (parsed.detail !== undefined) detail = typeof parsed.detail === "string" ? parsed.detail : JSON.stringify(parsed.detail);
  } catch {
    detail = text.slice(0, 200) || undefined;
  }
  const extra: { status: number; errorClass?: string; detail?: string } = { status };
  if (errorClass !== undefined) extra.errorClass = errorClass;
  if (detail !== undefined) extra.detail = detail;
  return new MumaError("http", `${where} failed: HTTP ${status}${errorClass ? ` ${errorClass}` : ""}${detail ? `: ${detail}` : ""}`, extra);
}

/** The body of a 2xx response: raw text, `{}` when empty, else parsed JSON. */
function parseBody<T>(text: string, where: string, raw: boolean | undefined): T {
  if (raw) return text as T;
  if (text.trim() === "") return {} as T;
  try {
    return JSON.parse(text) as T;
  } catch (err) {
    throw new MumaError("invalid_response", `${where}: response is not JSON`, { cause: err });
  }
}

export class MumaHttp {
  readonly config: MumaConfig;

  constructor(config: MumaConfig) {
    this.config = config;
  }

  async request<T = unknown>(method: string, path: string, opts: RequestOptions): Promise<T> {
    const url = new URL(this.config.serviceUrl + path);
    for (const [key, value] of Object.entries(opts.query ?? {})) {
      if (value !== undefined) url.searchParams.set(key, String(value));
    }
    const init = this.requestInit(method, opts);
    const deadline = startDeadline(opts.timeoutMs, opts.signal);
    init.signal = deadline.signal;
    const where = `${method} ${url.pathname}`;
    try {
      const fail = (err: unknown) => this.transportError(err, where, deadline.timedOut(), opts.timeoutMs);
      const { response, text } = await fetchText(url, init, fail);
      if (!response.ok) throw httpError(response.status, text, where);
      return parseBody<T>(text, where, opts.text);
    } finally {
      deadline.dispose();
    }
  }

  /** Method, headers and JSON body; throws `not_configured` (before any timer starts) without a token. */
  private requestInit(method: string, opts: RequestOptions): RequestInit {
    const headers: Record<string, string> = { accept: "application/json" };
    if (!opts.noAuth) {
      const problem = tokenProblem(this.config.token);
      if (problem) throw new MumaError("not_configured", problem);
      headers.authorization = `Bearer ${this.config.token}`;
      if (this.config.tenantId) headers["x-muma-tenant"] = this.config.tenantId;
    }
    const init: RequestInit = { method, headers };
    if (opts.body !== undefined) {
      headers["content-type"] = "application/json";
      init.body = JSON.stringify(opts.body);
    }
    return init;
  }

  private transportError(err: unknown, where: string, timedOut: boolean, timeoutMs: number): MumaError {
    if (err instanceof MumaError) return err;
    if (timedOut) return new MumaError("timeout", `${where} timed out after ${timeoutMs} ms`, { cause: err });
    const name = (err as { name?: unknown })?.name;
    if (name === "AbortError") return new MumaError("aborted", `${where} aborted`, { cause: err });
    const cause = (err as { cause?: { code?: unknown; message?: unknown } })?.cause;
    const code = typeof cause?.code === "string" ? cause.code : undefined;
    const msg = code ?? (typeof cause?.message === "string" ? cause.message : String((err as Error)?.message ?? err));
    return new MumaError("unreachable", `${where}: MUMA service unreachable at ${this.config.serviceUrl} (${msg})`, {
      cause: err,
    });
  }
}
