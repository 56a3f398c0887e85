"""A small OpenAI-compatible HTTP server for tests (stdlib only, one thread per request).

Tests talk to it through the real `openai` client over 127.0.0.1, so requests, JSON
bodies, status codes and error mapping are all exercised for real.

Endpoints:
- POST /v1/chat/completions  non-streaming; the answer comes from, in order:
  the queue (`reply(...)`, `fail(...)`), else the `chat` callable, else HTTP 501.
- POST /v1/embeddings        deterministic unit vectors of `embedding_dimension`
  (or `embed_fn(text)`); honours encoding_format "float" and "base64";
  `fail(..., endpoint="embeddings")` scripts failures here too.
- GET  /v1/models            lists `model`.

Usage::

    with FakeOpenAI() as server:
        server.reply('{"facts": []}', '{"facts": ["x"]}')   # canned contents, FIFO
        server.fail(503)                                    # next chat call answers 503
        server.chat = lambda request: '{"ok": true}'        # used when the queue is empty
        client = openai.OpenAI(base_url=server.base_url, api_key="sk-test")
        ...
        server.chat_requests[-1]["messages"]                # every request body is recorded

Every recorded request is a `Recorded(path, body, headers)` (header names lower-cased);
`server.requests` keeps all of them in arrival order. `delay_seconds` slows every answer
(client timeout tests).
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import json
import socket
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import numpy as np


@dataclass(frozen=True)
class HttpError:
    """A scripted failure: the server answers `status` with an OpenAI-style error body."""

    status: int
    message: str = "scripted failure"


ChatResult = str | HttpError
ChatFn = Callable[[dict[str, Any]], ChatResult]


@dataclass
class Recorded:
    path: str
    body: dict[str, Any]
    headers: dict[str, str] = field(default_factory=dict)
    at: float = field(default_factory=time.monotonic)  # when the request arrived


def deterministic_vector(text: str, dimension: int) -> list[float]:
    """A unit vector seeded by blake2b(text): equal texts map to equal vectors everywhere."""
    seed = int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "big")
    vector = np.random.default_rng(seed).standard_normal(dimension)
    return (vector / np.linalg.norm(vector)).astype(np.float32).tolist()


def unused_base_url() -> str:
    """A /v1 URL on a local port nothing listens on (for 'server down' tests)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"


class FakeOpenAI:
    """The server; a context manager that starts and stops it on a free local port."""

    def __init__(
        self,
        *,
        chat: ChatFn | None = None,
        embedding_dimension: int = 384,
        embed_fn: Callable[[str], list[float]] | None = None,
        model: str = "fake-model",
        delay_seconds: float = 0.0,
    ) -> None:
        self.chat = chat
        self.embedding_dimension = embedding_dimension
        self.embed_fn = embed_fn
        self.model = model
        self.delay_seconds = delay_seconds
        self.requests: list[Recorded] = []
        self._queue: deque[ChatResult] = deque()
        self._embedding_failures: deque[HttpError] = deque()
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- scripting -----------------------------------------------------------------

    def reply(self, *contents: str) -> FakeOpenAI:
        """Queue assistant message contents, answered one per chat request (FIFO)."""
        with self._lock:
            self._queue.extend(contents)
        return self

    def fail(
        self,
        status: int,
        message: str = "scripted failure",
        *,
        times: int = 1,
        endpoint: str = "chat",
    ) -> FakeOpenAI:
        """Queue `times` HTTP failures for the next requests to `endpoint` (chat|embeddings).

        Chat failures share the FIFO with `reply` contents, so they interleave in order.
        """
        errors = [HttpError(status, message) for _ in range(times)]
        with self._lock:
            (self._queue if endpoint == "chat" else self._embedding_failures).extend(errors)
        return self

    @property
    def chat_requests(self) -> list[dict[str, Any]]:
        return [r.body for r in self.requests if r.path.endswith("/chat/completions")]

    @property
    def embedding_requests(self) -> list[dict[str, Any]]:
        return [r.body for r in self.requests if r.path.endswith("/embeddings")]

    @property
    def pending(self) -> int:
        """Scripted answers not consumed yet (a test can assert it is 0)."""
        return len(self._queue) + len(self._embedding_failures)

    # -- lifecycle -----------------------------------------------------------------

    @property
    def base_url(self) -> str:
        if self._server is None:
            raise RuntimeError("FakeOpenAI is not running; use it as a context manager")
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}/v1"

    def start(self) -> FakeOpenAI:
        handler = type("Handler", (_Handler,), {"fake": self})
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self._server.daemon_threads = True
        # A short poll interval keeps stop() (and so each test's teardown) fast.
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def __enter__(self) -> FakeOpenAI:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- answers -------------------------------------------------------------------

    def _chat_result(self, body: dict[str, Any]) -> ChatResult:
        with self._lock:
            if self._queue:
                return self._queue.popleft()
        if self.chat is not None:
            return self.chat(body)
        return HttpError(501, "fake_openai: no scripted chat response left")

    def _chat_response(self, body: dict[str, Any], content: str) -> dict[str, Any]:
        prompt = sum(len(str(m.get("content", "")).split()) for m in body.get("messages", []))
        completion = len(content.split())
        return {
            "id": f"chatcmpl-fake-{len(self.requests)}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": body.get("model", self.model),
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": content},
                    "finish_reason": "stop",
                }
            ],
            "usage": {
                "prompt_tokens": prompt,
                "completion_tokens": completion,
                "total_tokens": prompt + completion,
            },
        }

    def _embeddings_response(self, body: dict[str, Any]) -> dict[str, Any]:
        texts = body.get("input", [])
        texts = [texts] if isinstance(texts, str) else texts
        make = self.embed_fn or (lambda t: deterministic_vector(t, self.embedding_dimension))
        data = []
        for index, text in enumerate(texts):
            vector: Any = make(text)
            if body.get("encoding_format") == "base64":
                vector = base64.b64encode(np.asarray(vector, dtype="<f4").tobytes()).decode()
            data.append({"object": "embedding", "index": index, "embedding": vector})
        tokens = sum(len(str(t).split()) for t in texts)
        return {
            "object": "list",
            "data": data,
            "model": body.get("model", self.model),
            "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
        }


class _Handler(BaseHTTPRequestHandler):
    fake: FakeOpenAI
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:  # keep test output clean
        pass

    def do_GET(self) -> None:
        if self.path.rstrip("/").endswith("/models"):
            model = {"id": self.fake.model, "object": "model", "created": 0, "owned_by": "fake"}
            self._send(200, {"object": "list", "data": [model]})
        else:
            self._send(404, _error("not found", 404))

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        try:
            body = json.loads(self.rfile.read(length) or b"{}")
        except json.JSONDecodeError:
            self._send(400, _error("body is not JSON", 400))
            return
        fake = self.fake
        with fake._lock:
            headers = {k.lower(): v for k, v in self.headers.items()}
            fake.requests.append(Recorded(self.path, body, headers))
        if fake.delay_seconds:
            time.sleep(fake.delay_seconds)
        if self.path.endswith("/embeddings"):
            with fake._lock:
                failure = fake._embedding_failures.popleft() if fake._embedding_failures else None
            if failure is not None:
                self._send(failure.status, _error(failure.message, failure.status))
            else:
                self._send(200, fake._embeddings_response(body))
        elif self.path.endswith("/chat/completions"):
            self._answer_chat(body)
        else:
            self._send(404, _error(f"no route {self.path}", 404))

    def _answer_chat(self, body: dict[str, Any]) -> None:
        if body.get("stream"):
            self._send(400, _error("fake_openai does not stream", 400))
            return
        result = self.fake._chat_result(body)
        if isinstance(result, HttpError):
            self._send(result.status, _error(result.message, result.status))
        else:
            self._send(200, self.fake._chat_response(body, result))

    def _send(self, status: int, payload: dict[str, Any]) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        # The client may have given up already (timeout tests); nothing is left to answer.
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            self.wfile.write(data)


def _error(message: str, status: int) -> dict[str, Any]:
    kind = "server_error" if status >= 500 else "invalid_request_error"
    return {"error": {"message": message, "type": kind, "param": None, "code": None}}
