"""A tiny HTTP server that answers every chat-completions request with fixed raw bytes.

For replies the scripted server cannot produce because they are not chat completions
at all: no ``choices``, a null message, an HTML page, invalid UTF-8, JSON escapes of
lone surrogates, a body nested 200,000 levels deep. ``BadOpenAIServer(bodies)`` serves the bodies in order (the last one
again once they run out) and records how many requests it got.
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


def completion(message: Any, finish_reason: str = "stop") -> bytes:
    """A well-formed envelope around ``message`` (a dict or anything else)."""
    return json.dumps({
        "id": "chatcmpl-bad", "object": "chat.completion", "created": 0, "model": "bad-model",
        "choices": [{"index": 0, "message": message, "finish_reason": finish_reason}],
        "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
    }).encode()


BODIES: dict[str, tuple[str, bytes]] = {
    "no choices": ("application/json", b'{"id": "x", "object": "chat.completion", "model": "m", "created": 0}'),
    "empty choices": (
        "application/json",
        b'{"id": "x", "object": "chat.completion", "model": "m", "created": 0, "choices": []}',
    ),
    "null choices": (
        "application/json",
        b'{"id": "x", "object": "chat.completion", "model": "m", "created": 0, "choices": null}',
    ),
    "null message": ("application/json", completion(None)),
    "html body": ("text/html", b"<html><body><h1>502 Bad Gateway</h1></body></html>"),
    "html as json": ("application/json", b"<html><body>oops</body></html>"),
    "invalid utf-8": (
        "application/json",
        completion({"role": "assistant", "content": "ok"}).replace(b'"ok"', b'"\xff\xfe\xc3("'),
    ),
    "truncated json": ("application/json", completion({"role": "assistant", "content": "ok"})[:40]),
    # deeper than the client's json.loads can recurse (it raised a bare RecursionError)
    "nested 200k": (
        "application/json",
        completion({"role": "assistant", "content": "ok"}).replace(b'"ok"', b"[" * 200_000 + b"]" * 200_000),
    ),
}


class BadOpenAIServer:
    def __init__(self, bodies: list[tuple[str, bytes]]):
        self.bodies = list(bodies)
        self.requests: list[bytes] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                server.requests.append(raw)
                kind, body = server.bodies[min(len(server.requests), len(server.bodies)) - 1]
                self.send_response(200)
                self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(len(body)))
                self.send_header("x-should-retry", "false")
                self.end_headers()
                self.wfile.write(body)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def __enter__(self) -> BadOpenAIServer:
        self.thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
