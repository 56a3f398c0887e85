/**
 * Tool parameter parsing. The model's arguments are untrusted: every reader checks type
 * and length and throws `ParamError` naming the parameter.
 */

export class ParamError extends Error {}

export type Params = Record<string, unknown>;

/** The arguments as an object (a JSON string is parsed); anything else is no arguments. */
export function asParams(raw: unknown): Params {
  if (raw && typeof raw === "object" && !Array.isArray(raw)) return raw as Params;
  if (typeof raw === "string") {
    try {
      const parsed = JSON.parse(raw) as unknown;
      if (parsed && typeof parsed === "object" && !Array.isArray(parsed)) return parsed as Params;
    } catch {
      /* fall through */
    }
  }
  return {};
}

export function reqString(p: Params, key: string, max = 500): string {
  const value = p[key];
  if (typeof value !== "string" || value.trim() === "") throw new ParamError(`parameter "${key}" is required (a non-empty string)`);
  const trimmed = value.trim();
  if (trimmed.length > max) throw new ParamError(`parameter "${key}" is too long (max ${max} characters)`);
  return trimmed;
}

export function optString(p: Params, key: string, max = 200): string | undefined {
  const value = p[key];
  if (value === undefined || value === null || value === "") return undefined;
  if (typeof value !== "string") throw new ParamError(`parameter "${key}" must be a string`);
  if (value.length > max) throw new ParamError(`parameter "${key}" is too long (max ${max} characters)`);
  return value.trim();
}

export function optEnum<T extends string>(p: Params, key: string, allowed: readonly T[]): T | undefined {
  const value = optString(p, key);
  if (value === undefined) return undefined;
  if (!(allowed as readonly string[]).includes(value)) {
    throw new ParamError(`parameter "${key}" must be one of: ${allowed.join(", ")}`);
  }
  return value as T;
}

export function reqEnum<T extends string>(p: Params, key: string, allowed: readonly T[]): T {
  const value = optEnum(p, key, allowed);
  if (value === undefined) throw new ParamError(`parameter "${key}" is required (one of: ${allowed.join(", ")})`);
  return value;
}

export function optBool(p: Params, key: string): boolean | undefined {
  const value = p[key];
  if (value === undefined || value === null) return undefined;
  if (typeof value === "boolean") return value;
  if (value === "true") return true;
  if (value === "false") return false;
  throw new ParamError(`parameter "${key}" must be a boolean`);
}

export function optInt(p: Params, key: string): number | undefined {
  const value = p[key];
  if (value === undefined || value === null || value === "") return undefined;
  const n = typeof value === "string" ? Number(value) : value;
  if (typeof n !== "number" || !Number.isFinite(n)) throw new ParamError(`parameter "${key}" must be a number`);
  return Math.trunc(n);
}

export function optStringList(p: Params, key: string, max = 20): string[] | undefined {
  const value = p[key];
  if (value === undefined || value === null) return undefined;
  const list = typeof value === "string" ? value.split(",") : value;
  if (!Array.isArray(list) || list.some((v) => typeof v !== "string")) {
    throw new ParamError(`parameter "${key}" must be a list of strings`);
  }
  const cleaned = (list as string[]).map((v) => v.trim()).filter(Boolean);
  if (cleaned.length > max) throw new ParamError(`parameter "${key}" has too many entries (max ${max})`);
  return cleaned.length ? cleaned : undefined;
}
