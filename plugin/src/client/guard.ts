/**
 * The two guards every hook runs MUMA work through: `safely()` never throws and
 * `withDeadline()` never waits longer than its budget.
 */
import type { PluginLogger } from "../types.js";
import { describeError } from "./http.js";

/**
 * Run `fn` and never throw: on any error, log one line and return `fallback`.
 * Used by every hook so a MUMA problem can never surface inside OpenClaw.
 */
export async function safely<T>(
  logger: PluginLogger,
  label: string,
  fn: () => Promise<T>,
  fallback: T,
  level: "warn" | "debug" = "warn",
): Promise<T> {
  try {
    return await fn();
  } catch (err) {
    const line = `[muma] ${label}: ${describeError(err)}`;
    try {
      if (level === "debug") (logger.debug ?? logger.info)(line);
      else logger.warn(line);
    } catch {
      /* a broken logger must not break a turn either */
    }
    return fallback;
  }
}

/**
 * Resolve with the promise's value, or with `onTimeout` after `ms` if it has not settled.
 * The underlying work is not cancelled (callers pass their own AbortSignal for that).
 */
export function withDeadline<T>(promise: Promise<T>, ms: number, onTimeout: T): Promise<T> {
  return new Promise<T>((resolve) => {
    const timer = setTimeout(() => resolve(onTimeout), Math.max(0, ms));
    timer.unref?.();
    promise.then(
      (value) => {
        clearTimeout(timer);
        resolve(value);
      },
      () => {
        clearTimeout(timer);
        resolve(onTimeout);
      },
    );
  });
}
