// A localhost HTTP proxy in front of a MUMA service that can be switched off: while down,
// every connection is dropped unanswered, as a stopped service would. The proxy keeps its
// port, so a client configured with its URL sees "the same service" come back.
import http from "node:http";

/** Start a proxy to `target` (e.g. "http://127.0.0.1:8000"). */
export async function startSwitchProxy(target) {
  const upstream = new URL(target);
  const state = { down: false, forwarded: [] };
  const server = http.createServer((req, res) => {
    if (state.down) {
      req.socket.destroy();
      return;
    }
    state.forwarded.push(`${req.method} ${req.url}`);
    const out = http.request(
      { host: upstream.hostname, port: upstream.port, method: req.method, path: req.url, headers: { ...req.headers, host: upstream.host } },
      (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
      },
    );
    out.on("error", (err) => {
      res.writeHead(502, { "content-type": "application/json" });
      res.end(JSON.stringify({ detail: `proxy: ${err.message}` }));
    });
    req.pipe(out);
  });
  await new Promise((r) => server.listen(0, "127.0.0.1", r));
  return {
    url: `http://127.0.0.1:${server.address().port}`,
    state,
    close: () => new Promise((r) => server.close(() => r())),
  };
}
