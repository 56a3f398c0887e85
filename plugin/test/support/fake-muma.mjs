// A small in-memory stand-in for the MUMA HTTP API (node:http, no dependencies).
//
// Used by the unit tests (as a programmable mock: delays, failures, request recording) and
// by the end-to-end test when MUMA_E2E_URL is not set. It stores episodes and memories per
// (tenant, user) and answers /v1/search and /v1/context by word overlap, only ever from the
// same user's data. It is NOT the real service: the e2e test prints which one it uses.
//
// Run standalone: node test/support/fake-muma.mjs [port] [token]
import http from "node:http";
import { randomUUID } from "node:crypto";

const STOP = new Set(
  "the a an and or but is are was were be been am i me my you your we our it its of to in on at for with what who how when where which this that do does did have has had called".split(
    " ",
  ),
);

export function words(text) {
  return new Set(
    String(text)
      .toLowerCase()
      .split(/[^\p{L}\p{N}]+/u)
      .filter((w) => w.length > 1 && !STOP.has(w)),
  );
}

/**
 * @param {{ token?: string, delays?: Record<string, number>, failures?: Record<string, number>, contextPrefix?: string }} [options]
 *   delays: "METHOD /path-prefix" or "/path-prefix" → ms to wait before answering
 *   failures: same keys → HTTP status to answer with
 */
export async function startFakeMuma(options = {}) {
  const token = options.token ?? "test-token";
  const state = {
    requests: [],
    episodes: [], // {id, tenant, user_id, agent_id, session_id, role, content, idempotency_key, ...}
    notes: [], // {id, tenant, user_id, agent_id, content, kind, domain, visibility, pinned, tags, status, origin, origin_ref, trust, instruction_like, review}
    links: [],
    working: new Map(), // `${tenant}|${user}|${session}` → items[]
    promotions: [],
    consolidations: [],
    delays: { ...(options.delays ?? {}) },
    failures: { ...(options.failures ?? {}) },
  };
  const sockets = new Set();

  const lookup = (table, method, path) => {
    for (const [key, value] of Object.entries(table)) {
      const [m, p] = key.includes(" ") ? key.split(" ", 2) : [undefined, key];
      if ((m === undefined || m === method) && path.startsWith(p)) return value;
    }
    return undefined;
  };

  const send = (res, status, body, type = "application/json") => {
    if (res.writableEnded || res.destroyed) return;
    res.writeHead(status, { "content-type": type });
    res.end(type === "application/json" ? JSON.stringify(body) : body);
  };

  const userNotes = (tenant, user) =>
    state.notes.filter((n) => n.tenant === tenant && n.user_id === user && n.status === "active");

  const search = (tenant, user, query, topK = 8) => {
    const q = words(query);
    const scored = [];
    for (const note of userNotes(tenant, user)) {
      const w = words(note.content);
      let overlap = 0;
      for (const x of q) if (w.has(x)) overlap++;
      if (overlap > 0) scored.push({ note, score: overlap / Math.max(1, q.size) });
    }
    scored.sort((a, b) => b.score - a.score);
    return scored.slice(0, topK).map(({ note, score }) => ({
      id: note.id,
      content: note.content,
      kind: note.kind,
      domain: note.domain ?? null,
      visibility: note.visibility,
      occurred_at: note.created_at,
      origin: note.origin,
      origin_ref: note.origin_ref,
      trust: note.trust,
      instruction_like: note.instruction_like,
      candidate: note.review === "candidate",
      score: Number(score.toFixed(3)),
      sources: note.sources ?? [],
      explanation: { route: "fake-word-overlap" },
    }));
  };

  // Like the service: only the named session's items of this user, only those sharing a word.
  const searchWorking = (key, query) => {
    const q = words(query);
    return (state.working.get(key) ?? [])
      .filter((item) => [...words(item.content)].some((w) => q.has(w)))
      .slice(0, 5)
      .map((item, i) => ({ hash: `h${i}`, content: item.content, score: 1, explanation: { routes: { working: i + 1 } } }));
  };

  const addNote = (tenant, fields) => {
    const note = {
      id: randomUUID(),
      tenant,
      kind: "episodic",
      domain: null,
      visibility: "scoped",
      pinned: false,
      tags: [],
      status: "active",
      origin: "user",
      origin_ref: null,
      trust: "high",
      instruction_like: false,
      review: null, // "candidate": waits for review (/v1/candidates)
      created_at: new Date().toISOString(),
      ...fields,
    };
    state.notes.push(note);
    return note;
  };

  // The note as the service answers it (NoteOut): no tenant, `candidate` instead of `review`.
  const noteOut = ({ tenant: _tenant, review, ...note }) => ({ ...note, candidate: review === "candidate" });

  const server = http.createServer((req, res) => {
    let raw = "";
    req.setEncoding("utf8");
    req.on("data", (chunk) => (raw += chunk));
    req.on("end", async () => {
      const url = new URL(req.url ?? "/", "http://x");
      const path = url.pathname;
      const method = req.method ?? "GET";
      let body;
      try {
        body = raw ? JSON.parse(raw) : undefined;
      } catch {
        return send(res, 400, { error: "InvalidInputError", detail: "body is not JSON" });
      }
      const record = { method, path, query: Object.fromEntries(url.searchParams), headers: req.headers, body, at: Date.now() };
      state.requests.push(record);

      const delay = lookup(state.delays, method, path);
      if (delay) await new Promise((r) => setTimeout(r, delay));
      const failure = lookup(state.failures, method, path);
      if (failure) return send(res, failure, { error: failure >= 500 ? "TransientError" : "InvalidInputError", detail: "injected failure" });

      if (method === "GET" && path === "/healthz") return send(res, 200, { status: "ok", fake: true });
      if (req.headers.authorization !== `Bearer ${token}`) return send(res, 401, { error: "AuthError", detail: "bad token" });
      const tenant = req.headers["x-muma-tenant"] ?? "default";
      const q = record.query;
      const needUser = (u) => {
        if (!u) {
          send(res, 400, { error: "InvalidInputError", detail: "user_id is required" });
          return false;
        }
        return true;
      };
      // As the service: an agent token (the plugin's) must name the agent it reads for.
      const needAgent = (a) => {
        if (!a) {
          send(res, 422, { error: "InvalidInputError", detail: "agent_id: field required for agent tokens" });
          return false;
        }
        return true;
      };

      // ---- write path
      if (method === "POST" && path === "/v1/episodes") {
        const eps = Array.isArray(body?.episodes) ? body.episodes : [];
        const ids = [];
        for (const ep of eps) {
          if (!ep.user_id || !ep.agent_id || !ep.role || typeof ep.content !== "string") {
            return send(res, 400, { error: "InvalidInputError", detail: "episode needs user_id, agent_id, role, content" });
          }
          const dup = ep.idempotency_key && state.episodes.find((e) => e.tenant === tenant && e.idempotency_key === ep.idempotency_key);
          if (dup) {
            ids.push(dup.id);
            continue;
          }
          const stored = { id: randomUUID(), tenant, ...ep };
          state.episodes.push(stored);
          ids.push(stored.id);
          if (ep.role === "user") addNote(tenant, { user_id: ep.user_id, agent_id: ep.agent_id, content: ep.content, sources: [stored.id] });
        }
        return send(res, 202, { episode_ids: ids });
      }
      if (method === "POST" && path === "/v1/memories") {
        if (!needUser(body?.user_id)) return;
        const episodeId = randomUUID();
        const note = addNote(tenant, {
          user_id: body.user_id,
          agent_id: body.agent_id,
          content: body.content,
          kind: body.kind ?? "stable",
          domain: body.domain ?? null,
          visibility: body.visibility ?? "scoped",
          tags: body.tags ?? [],
          pinned: body.pinned ?? false,
          sources: [episodeId],
          origin: "agent",
          trust: "medium",
        });
        if (q.wait) return send(res, 201, { episode_id: episodeId, note_ids: [note.id], decision: "ADD" });
        return send(res, 202, { episode_id: episodeId });
      }

      // ---- read path
      if (method === "POST" && path === "/v1/search") {
        if (!needUser(body?.user_id)) return;
        const started = Date.now();
        const results = search(tenant, body.user_id, body.query ?? "", body.top_k ?? 8);
        const working = body.session_id ? searchWorking(`${tenant}|${body.user_id}|${body.session_id}`, body.query ?? "") : [];
        return send(res, 200, { results, working, took_ms: Date.now() - started });
      }
      if (method === "POST" && path === "/v1/context") {
        if (!needUser(body?.user_id)) return;
        const prompt = String(body.prompt ?? "").trim();
        const memories = search(tenant, body.user_id, prompt, 5).filter((m) => m.content.trim() !== prompt);
        const context = memories.length
          ? `<relevant-memories>\n${options.contextPrefix ?? ""}${memories.map((m) => `- ${m.content}`).join("\n")}\n</relevant-memories>`
          : "";
        const timedOut = Boolean(state.contextTimedOut);
        return send(res, 200, { context, memories, tokens: Math.ceil(context.length / 4), took_ms: 1, timed_out: timedOut });
      }

      const memoryMatch = path.match(/^\/v1\/memories\/([^/]+)$/);
      if (memoryMatch) {
        const id = decodeURIComponent(memoryMatch[1]);
        const userId = method === "PATCH" ? body?.user_id : q.user_id;
        if (!needUser(userId)) return;
        const note = state.notes.find((n) => n.id === id && n.tenant === tenant && n.user_id === userId && n.status !== "deleted");
        if (!note) return send(res, 404, { error: "NotFoundError", detail: `memory ${id} not found` });
        if (method === "GET") return send(res, 200, note);
        if (method === "DELETE") {
          note.status = "deleted";
          return send(res, 200, { id, status: "deleted" });
        }
        if (method === "PATCH") {
          for (const key of ["pinned", "visibility", "tags", "domain", "kind"]) if (body[key] !== undefined) note[key] = body[key];
          return send(res, 200, note);
        }
      }
      // ---- memory candidates (review)
      if (method === "GET" && path === "/v1/candidates") {
        if (!needUser(q.user_id)) return;
        const waiting = userNotes(tenant, q.user_id).filter((n) => n.review === "candidate");
        return send(res, 200, waiting.reverse().slice(0, Number(q.limit ?? 100)).map(noteOut));
      }
      const candidateMatch = path.match(/^\/v1\/candidates\/([^/]+)\/(approve|reject)$/);
      if (candidateMatch && method === "POST") {
        if (!needUser(body?.user_id)) return;
        const id = decodeURIComponent(candidateMatch[1]);
        const note = userNotes(tenant, body.user_id).find((n) => n.id === id);
        if (!note) return send(res, 404, { error: "NotFoundError", detail: `memory ${id} not found` });
        if (note.review !== "candidate") {
          return send(res, 409, { error: "ConflictError", detail: "this memory is not a candidate waiting for review" });
        }
        if (candidateMatch[2] === "reject") {
          note.status = "deleted";
          note.rejected = body.reason ?? true;
          const counts = { knowledge_notes: 0, episodes_erased: 0, episodes_redacted: 0, notes_changed: 0, working_items: 0, files: 0 };
          return send(res, 200, { id, forgotten: true, versions: 1, ...counts });
        }
        if (typeof body.content === "string" && body.content !== note.content) {
          note.status = "superseded";
          const { id: _old, created_at: _at, ...rest } = note;
          return send(res, 200, noteOut(addNote(tenant, { ...rest, status: "active", content: body.content, review: null })));
        }
        note.review = null;
        return send(res, 200, noteOut(note));
      }

      if (method === "POST" && path === "/v1/links") {
        if (!needUser(body?.user_id)) return;
        const link = { id: randomUUID(), ...body, kind: body.kind ?? "related" };
        state.links.push(link);
        return send(res, 201, link);
      }
      if (method === "GET" && path === "/v1/stats") {
        if (!needUser(q.user_id) || !needAgent(q.agent_id)) return;
        const notes = userNotes(tenant, q.user_id);
        return send(res, 200, {
          notes: notes.length,
          pinned: notes.filter((n) => n.pinned).length,
          episodes: state.episodes.filter((e) => e.tenant === tenant && e.user_id === q.user_id).length,
          links: state.links.filter((l) => l.user_id === q.user_id).length,
        });
      }
      if (method === "POST" && path === "/v1/agents/search") {
        if (!needUser(body?.user_id)) return;
        const byAgent = new Map();
        for (const hit of search(tenant, body.user_id, body.query ?? "", 100)) {
          const note = state.notes.find((n) => n.id === hit.id);
          const a = byAgent.get(note.agent_id) ?? { agent_id: note.agent_id, score: 0, note_count: 0, topics: [] };
          a.score += hit.score;
          a.note_count += 1;
          byAgent.set(note.agent_id, a);
        }
        return send(res, 200, { agents: [...byAgent.values()].sort((x, y) => y.score - x.score) });
      }
      if (method === "POST" && path === "/v1/consolidate") {
        if (!needUser(body?.user_id)) return;
        state.consolidations.push(body.user_id);
        return send(res, 202, { status: "queued", task_id: randomUUID() });
      }
      if (method === "GET" && path === "/v1/conflicts") {
        if (!needUser(q.user_id) || !needAgent(q.agent_id)) return;
        return send(res, 200, { conflicts: [] });
      }
      if (method === "GET" && path === "/v1/export") {
        if (!needUser(q.user_id) || !needAgent(q.agent_id)) return;
        const lines = userNotes(tenant, q.user_id).map((n) => JSON.stringify({ id: n.id, content: n.content, kind: n.kind }));
        return send(res, 200, lines.join("\n") + (lines.length ? "\n" : ""), "application/x-ndjson");
      }
      const sessionMatch = path.match(/^\/v1\/sessions\/([^/]+)\/(working|promote)$/);
      if (sessionMatch) {
        const sid = decodeURIComponent(sessionMatch[1]);
        const userId = method === "GET" ? q.user_id : body?.user_id;
        if (!needUser(userId)) return;
        const key = `${tenant}|${userId}|${sid}`;
        if (sessionMatch[2] === "working") {
          if (method === "PUT") {
            const items = state.working.get(key) ?? [];
            items.push(...(body.items ?? []));
            state.working.set(key, items);
            return send(res, 200, { session_id: sid, items });
          }
          if (method === "GET") return send(res, 200, { session_id: sid, items: state.working.get(key) ?? [] });
        }
        if (sessionMatch[2] === "promote" && method === "POST") {
          const items = state.working.get(key) ?? [];
          state.promotions.push({ session_id: sid, user_id: userId, agent_id: body.agent_id, reason: body.reason, count: items.length });
          for (const item of items) addNote(tenant, { user_id: userId, agent_id: body.agent_id, content: item.content, kind: "ephemeral" });
          state.working.delete(key);
          return send(res, 200, { promoted: items.length });
        }
      }
      return send(res, 404, { error: "NotFoundError", detail: `${method} ${path}` });
    });
  });
  server.on("connection", (socket) => {
    sockets.add(socket);
    socket.on("close", () => sockets.delete(socket));
  });
  await new Promise((resolve) => server.listen(options.port ?? 0, "127.0.0.1", resolve));
  const { port } = server.address();
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    token,
    state,
    /** Requests to a path (optionally one method). */
    requestsTo(path, method) {
      return state.requests.filter((r) => r.path === path && (!method || r.method === method));
    },
    reset() {
      state.requests.length = 0;
    },
    async close() {
      for (const s of sockets) s.destroy();
      await new Promise((resolve) => server.close(() => resolve()));
    },
  };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const port = Number(process.argv[2] ?? 8799);
  const token = process.argv[3] ?? "test-token";
  const fake = await startFakeMuma({ port, token });
  console.log(`fake MUMA listening on ${fake.url} (token ${token})`);
}
