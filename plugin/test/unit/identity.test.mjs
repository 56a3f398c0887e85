import { test } from "node:test";
import assert from "node:assert/strict";
import {
  IdentityResolver,
  agentFromSessionKey,
  channelPrefixedSender,
  hookIdentityInput,
  toolIdentityInput,
  userFromSessionKey,
} from "../../dist/identity.js";

test("session-key convention", () => {
  assert.equal(userFromSessionKey("agent:main:user:alice"), "alice");
  assert.equal(userFromSessionKey("user:alice"), "alice");
  assert.equal(userFromSessionKey("agent:main:user:alice:work"), "alice");
  assert.equal(userFromSessionKey("agent:main:openai-user:bob"), "bob");
  assert.equal(userFromSessionKey("agent:main:user:telegram%3A42"), "telegram:42");
  assert.equal(userFromSessionKey("agent:main:main"), undefined);
  assert.equal(userFromSessionKey("agent:main:user:"), undefined);
  assert.equal(userFromSessionKey(undefined), undefined);
  assert.equal(agentFromSessionKey("agent:ops:user:a"), "ops");
  assert.equal(agentFromSessionKey("user:a"), undefined);
});

test("channel-prefixed sender", () => {
  assert.equal(channelPrefixedSender("Telegram", "123"), "telegram:123");
  assert.equal(channelPrefixedSender("telegram", "telegram:123"), "telegram:123");
  assert.equal(channelPrefixedSender(undefined, "123"), "unknown:123");
  assert.equal(channelPrefixedSender("slack", ""), undefined);
});

test("resolution order: sender, then session key, then cache, then default", () => {
  const r = new IdentityResolver("owner");
  // 1. sender beats the session key
  let id = r.resolve({ senderId: "42", channel: "telegram", sessionKey: "agent:main:user:alice", sessionId: "s1" });
  assert.equal(id.userId, "telegram:42");
  assert.equal(id.userSource, "sender");
  // 2. session key
  id = r.resolve({ sessionKey: "agent:main:user:alice:x", sessionId: "s2" });
  assert.equal(id.userId, "alice");
  assert.equal(id.userSource, "session-key");
  assert.equal(id.agentId, "main");
  assert.equal(id.sessionId, "s2");
  // 3. cache: a later hook with only the session id (or key) of a known session
  id = r.resolve({ sessionId: "s1" });
  assert.equal(id.userId, "telegram:42");
  assert.equal(id.userSource, "cache");
  // 4. default
  id = r.resolve({ sessionKey: "agent:main:main", sessionId: "s3" });
  assert.equal(id.userId, "owner");
  assert.equal(id.userSource, "default");
  // session falls back to the key, agent to the key prefix
  id = r.resolve({ sessionKey: "agent:ops:user:zed" });
  assert.equal(id.sessionId, "agent:ops:user:zed");
  assert.equal(id.agentId, "ops");
});

test("no identity without sender, convention or default", () => {
  const r = new IdentityResolver(undefined);
  assert.equal(r.resolve({ sessionKey: "agent:main:main", sessionId: "x" }), undefined);
  assert.equal(r.resolve({}), undefined);
});

test("link: a new session id inherits the user of its key", () => {
  const r = new IdentityResolver(undefined);
  r.resolve({ senderId: "7", channel: "slack", sessionKey: "agent:main:slack:dm:7" });
  r.link("agent:main:slack:dm:7", "new-sid");
  assert.equal(r.resolve({ sessionId: "new-sid" }).userId, "slack:7");
});

test("input extraction from hook and tool contexts", () => {
  assert.deepEqual(hookIdentityInput({ senderId: "1", channel: "discord", sessionKey: "k", sessionId: "s", agentId: "a" }), {
    senderId: "1",
    channel: "discord",
    sessionKey: "k",
    sessionId: "s",
    agentId: "a",
  });
  // message hooks: channel in channelId, sender in ctx or event
  assert.equal(hookIdentityInput({ channelId: "telegram" }, { senderId: "9" }).channel, "telegram");
  assert.equal(hookIdentityInput({ channelId: "telegram" }, { senderId: "9" }).senderId, "9");
  // tool hook requester
  assert.equal(hookIdentityInput({ requester: { channel: "slack", senderId: "U1" } }).senderId, "U1");
  assert.equal(hookIdentityInput({ channelContext: { sender: { id: "S" } }, messageProvider: "feishu" }).channel, "feishu");
  const t = toolIdentityInput({ requesterSenderId: "5", messageChannel: "whatsapp", sessionKey: "k", agentId: "main" });
  assert.equal(t.senderId, "5");
  assert.equal(t.channel, "whatsapp");
});
