/**
 * Who is the user, which agent, which session?
 *
 * Identity is taken ONLY from what OpenClaw supplies (hook/tool context and the inbound
 * sender), never from model-supplied tool parameters. The user is resolved in this order:
 *
 *   1. Channel-prefixed sender id: `<channel>:<senderId>`, e.g. `telegram:123456`, from the
 *      trusted inbound sender (`ctx.senderId`, `ctx.channelContext.sender.id`,
 *      `ctx.requester.senderId`, tool `ctx.requesterSenderId`) and the channel
 *      (`ctx.channel`, `ctx.messageProvider`, tool `ctx.messageChannel`).
 *   2. Session-key convention: a session key containing `:user:<id>` (or `user:<id>` at the
 *      start) names the user `<id>`; `--session-key user:alice` arrives as
 *      `agent:main:user:alice`. Only the one segment after `user:` is the id, so
 *      `agent:main:user:alice:work` is user `alice` in another session; percent-encode a
 *      colon inside an id (`%3A`). OpenClaw's gateway turns with an OpenAI `user` field get
 *      `agent:main:openai-user:<user>`, which resolves the same way.
 *   3. A user already resolved earlier for the same session key or session id in this
 *      process (hooks such as `session_end` carry no sender).
 *   4. The configured `defaultUserId` (single-user installs).
 *
 * With none of these, the identity is missing: hooks skip their MUMA call and tools answer
 * with an error text. Nothing is ever stored under a guessed user.
 *
 * The agent is `ctx.agentId`, else the `agent:<id>:` prefix of the session key, else
 * `main`. The session is OpenClaw's `sessionId` (regenerated on /new and /reset), else the
 * session key.
 */

export type UserSource = "sender" | "session-key" | "cache" | "default";

export interface IdentityInput {
  senderId?: string | undefined;
  channel?: string | undefined;
  sessionKey?: string | undefined;
  sessionId?: string | undefined;
  agentId?: string | undefined;
}

export interface ResolvedIdentity {
  userId: string;
  agentId: string;
  sessionId: string | undefined;
  sessionKey: string | undefined;
  userSource: UserSource;
}

const USER_MARKERS = new Set(["user", "openai-user"]);

function clean(value: unknown): string | undefined {
  if (typeof value !== "string") return undefined;
  const trimmed = value.trim();
  return trimmed === "" ? undefined : trimmed;
}

function decode(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    return segment;
  }
}

/** `agent:main:user:alice` → `alice`; `user:alice:work` → `alice`; no convention → undefined. */
export function userFromSessionKey(sessionKey: string | undefined): string | undefined {
  const key = clean(sessionKey);
  if (!key) return undefined;
  const parts = key.split(":");
  for (let i = 0; i < parts.length - 1; i++) {
    const marker = parts[i]!.toLowerCase();
    if (USER_MARKERS.has(marker)) {
      const id = clean(decode(parts[i + 1]!));
      if (id) return id;
    }
  }
  return undefined;
}

/** `agent:ops:...` → `ops`. */
export function agentFromSessionKey(sessionKey: string | undefined): string | undefined {
  const key = clean(sessionKey);
  if (!key) return undefined;
  const parts = key.split(":");
  if (parts.length >= 2 && parts[0]!.toLowerCase() === "agent") return clean(parts[1]);
  return undefined;
}

/** `telegram` + `123` → `telegram:123` (an id that already carries the prefix is kept). */
export function channelPrefixedSender(channel: string | undefined, senderId: string | undefined): string | undefined {
  const sender = clean(senderId);
  if (!sender) return undefined;
  const ch = (clean(channel) ?? "unknown").toLowerCase();
  if (sender.toLowerCase().startsWith(`${ch}:`)) return sender;
  return `${ch}:${sender}`;
}

const CACHE_LIMIT = 2000;

export class IdentityResolver {
  private readonly defaultUserId: string | undefined;
  private readonly bySession = new Map<string, string>();

  constructor(defaultUserId: string | undefined) {
    this.defaultUserId = clean(defaultUserId);
  }

  resolve(input: IdentityInput): ResolvedIdentity | undefined {
    const sessionKey = clean(input.sessionKey);
    const sessionId = clean(input.sessionId) ?? sessionKey;
    const agentId = clean(input.agentId) ?? agentFromSessionKey(sessionKey) ?? "main";

    let userId: string | undefined;
    let userSource: UserSource | undefined;
    const sender = channelPrefixedSender(input.channel, input.senderId);
    if (sender) {
      userId = sender;
      userSource = "sender";
    } else {
      const fromKey = userFromSessionKey(sessionKey);
      if (fromKey) {
        userId = fromKey;
        userSource = "session-key";
      } else {
        const cached =
          (sessionKey ? this.bySession.get(`k:${sessionKey}`) : undefined) ??
          (input.sessionId ? this.bySession.get(`i:${input.sessionId}`) : undefined);
        if (cached) {
          userId = cached;
          userSource = "cache";
        } else if (this.defaultUserId) {
          userId = this.defaultUserId;
          userSource = "default";
        }
      }
    }
    if (!userId || !userSource) return undefined;
    if (userSource === "sender" || userSource === "session-key") {
      if (sessionKey) this.remember(`k:${sessionKey}`, userId);
      if (input.sessionId) this.remember(`i:${input.sessionId}`, userId);
    }
    return { userId, agentId, sessionId, sessionKey, userSource };
  }

  /** Link a session id to the user of a session key (e.g. on session_start). */
  link(sessionKey: string | undefined, sessionId: string | undefined): void {
    const key = clean(sessionKey);
    const id = clean(sessionId);
    if (!key || !id) return;
    const user = this.bySession.get(`k:${key}`);
    if (user) this.remember(`i:${id}`, user);
  }

  private remember(key: string, userId: string): void {
    if (this.bySession.has(key)) this.bySession.delete(key);
    this.bySession.set(key, userId);
    if (this.bySession.size > CACHE_LIMIT) {
      const oldest = this.bySession.keys().next().value;
      if (oldest !== undefined) this.bySession.delete(oldest);
    }
  }
}

/** Identity input from a hook context (agent, tool, message or session hooks). */
export function hookIdentityInput(ctx: Record<string, unknown> | undefined, event?: Record<string, unknown>): IdentityInput {
  const c = (ctx ?? {}) as Record<string, any>;
  const e = (event ?? {}) as Record<string, any>;
  const senderId =
    clean(c.senderId) ?? clean(c.channelContext?.sender?.id) ?? clean(c.requester?.senderId) ?? clean(e.senderId);
  // Agent contexts carry the provider surface in channel/messageProvider (channelId is the
  // conversation); message contexts carry it in channelId.
  const channel =
    clean(c.channel) ?? clean(c.messageProvider) ?? clean(c.requester?.channel) ?? clean(e.channel) ?? clean(c.channelId);
  return {
    senderId,
    channel,
    sessionKey: clean(c.sessionKey) ?? clean(e.sessionKey),
    sessionId: clean(c.sessionId) ?? clean(e.sessionId),
    agentId: clean(c.agentId),
  };
}

/** Identity input from a tool factory context. */
export function toolIdentityInput(ctx: Record<string, unknown> | undefined): IdentityInput {
  const c = (ctx ?? {}) as Record<string, any>;
  return {
    senderId: clean(c.requesterSenderId),
    channel: clean(c.messageChannel) ?? clean(c.deliveryContext?.channel),
    sessionKey: clean(c.sessionKey),
    sessionId: clean(c.sessionId),
    agentId: clean(c.agentId),
  };
}
