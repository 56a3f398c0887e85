import net from "node:net";
import entry from "../../dist/index.js";
import { createMockApi } from "./mock-api.mjs";

/** A localhost port with nothing listening (connection refused). */
export async function closedPort() {
  const srv = net.createServer();
  await new Promise((r) => srv.listen(0, "127.0.0.1", r));
  const { port } = srv.address();
  await new Promise((r) => srv.close(r));
  return port;
}

/** Register the plugin into a fresh mock api. */
export function setup(pluginConfig) {
  const api = createMockApi({ pluginConfig });
  entry.register(api);
  return api;
}

export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** Wait until fn() is truthy (polling), or fail after ms. */
export async function waitFor(fn, ms = 2000, what = "condition") {
  const end = Date.now() + ms;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await sleep(10);
  }
}

/** Context of a local agent turn (no sender, user from the session key). */
export function agentCtx(user = "alice", session = "s1", extra = {}) {
  return { agentId: "main", sessionKey: `agent:main:user:${user}:${session}`, sessionId: `sid-${user}-${session}`, runId: `run-${user}-${session}`, ...extra };
}
