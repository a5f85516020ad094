"""The HTTP side of the scripted OpenAI-compatible server (``scripted_server.py``): the threading
HTTP server and request handler (routes, JSON and error bodies) and the chunked server-sent-events
stream of a streamed chat completion. What to answer is the owner's job (``scripted_openai.py``).
Stdlib only."""

from __future__ import annotations

import contextlib
import json
import re
import socket
import time
from collections.abc import Callable, Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Protocol

__all__ = [
    "Owner", "ScriptedHTTPServer", "ScriptedHandler", "end_events", "event_writer", "split_words", "stream_completion",
]

_DEFAULT_ERROR_TYPES = {
    400: "invalid_request_error",
    401: "invalid_request_error",
    403: "invalid_request_error",
    404: "invalid_request_error",
    409: "invalid_request_error",
    422: "invalid_request_error",
    429: "rate_limit_error",
}

_WORDS = re.compile(r"\s*\S+\s*|\s+")


class Owner(Protocol):
    """What the handler asks of the server object it serves for (``ScriptedOpenAIServer``)."""

    model: str

    def track_connection(self, conn: socket.socket, *, add: bool) -> None: ...

    def reply_from_cassette(self, h: ScriptedHandler, raw: bytes) -> bool: ...

    def handle_completion(self, h: ScriptedHandler, request: dict[str, Any], raw: bytes) -> None: ...

    def handle_responses(self, h: ScriptedHandler, request: dict[str, Any], raw: bytes) -> None: ...


class ScriptedHTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 128  # (many concurrent runs connect at once: the default backlog is 5)

    owner: Owner

    def handle_error(self, request: Any, client_address: Any) -> None:  # quiet
        pass


class ScriptedHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "ScriptedOpenAI/1.0"
    timeout = 120  # idle keep-alive connections are dropped eventually
    server: ScriptedHTTPServer

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        pass

    def setup(self) -> None:
        super().setup()
        # Headers and body go out as separate writes: avoid the ~40 ms Nagle/delayed-ACK stall.
        with contextlib.suppress(OSError):
            self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.server.owner.track_connection(self.connection, add=True)

    def finish(self) -> None:
        try:
            super().finish()
        finally:
            self.server.owner.track_connection(self.connection, add=False)

    # -- plumbing ---------------------------------------------------------- #
    def send_json(self, status: int, body: Any, headers: Mapping[str, str] | None = None) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for k, v in (headers or {}).items():
            self.send_header(k, str(v))
        self.end_headers()
        self.wfile.write(data)
        self.wfile.flush()

    def send_api_error(
        self,
        status: int,
        message: str,
        type_: str | None = None,
        code: str | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        body = {
            "error": {
                "message": message,
                "type": type_ or _DEFAULT_ERROR_TYPES.get(status, "server_error"),
                "param": None,
                "code": code,
            }
        }
        self.send_json(status, body, headers)

    def _read_body(self) -> bytes:
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length > 0 else b""

    def _path(self) -> str:
        path = self.path.split("?", 1)[0].rstrip("/")
        return path[3:] if path.startswith("/v1/") else path

    # -- routes ------------------------------------------------------------ #
    def do_GET(self) -> None:
        try:
            if self._path() == "/models":
                owner = self.server.owner
                self.send_json(
                    200,
                    {
                        "object": "list",
                        "data": [{"id": owner.model, "object": "model", "created": 0, "owned_by": "scripted"}],
                    },
                )
            else:
                self.send_api_error(
                    404, f"scripted server: unknown path {self.path}", headers={"x-should-retry": "false"}
                )
        except (BrokenPipeError, ConnectionError, OSError):
            self.close_connection = True

    def do_POST(self) -> None:
        try:
            raw = self._read_body()
            if self.server.owner.reply_from_cassette(self, raw):
                return
            path = self._path()
            if path not in ("/chat/completions", "/responses"):
                self.send_api_error(
                    404, f"scripted server: unknown path {self.path}", headers={"x-should-retry": "false"}
                )
                return
            try:
                request = json.loads(raw.decode("utf-8"))
                if not isinstance(request, dict):
                    raise ValueError("request body must be a JSON object")
            except (ValueError, UnicodeDecodeError) as exc:
                self.send_api_error(
                    400, f"scripted server: malformed JSON body: {exc}", headers={"x-should-retry": "false"}
                )
                return
            if path == "/responses":
                self.server.owner.handle_responses(self, request, raw)
            else:
                self.server.owner.handle_completion(self, request, raw)
        except (BrokenPipeError, ConnectionError, OSError):
            # Client went away (e.g. its timeout fired during a delay).
            self.close_connection = True


def split_words(content: str) -> list[str]:
    """The pieces a streamed text is sent in: each word with its spaces."""
    return _WORDS.findall(content)


def stream_completion(
    h: ScriptedHandler,
    cid: str,
    created: int,
    model: str,
    content: str,
    calls: list[dict[str, Any]],
    finish: str,
    usage: dict[str, int],
    include_usage: bool,
    chunk_delay: float,
    extra_headers: Mapping[str, str],
    pause_point: Callable[[int, str], None] = lambda _n, _text: None,
) -> None:
    """Send a chat completion as OpenAI's chunked server-sent events: the role, the content word by
    word (``pause_point(count, text so far)`` after each), each tool call (its arguments in two
    halves), the finish reason, the usage chunk when asked for, ``[DONE]``."""
    write = event_writer(h, extra_headers)

    def chunk(delta: dict[str, Any], finish_reason: str | None = None) -> None:
        body: dict[str, Any] = {
            "id": cid,
            "object": "chat.completion.chunk",
            "created": created,
            "model": model,
            "system_fingerprint": None,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason, "logprobs": None}],
        }
        if include_usage:
            body["usage"] = None
        write(f"data: {json.dumps(body)}\n\n")
        if chunk_delay > 0:
            time.sleep(chunk_delay)

    chunk({"role": "assistant", "content": "", "refusal": None})
    sent = ""
    pause_point(0, sent)  # (pause_after 0: the stream is open, no word sent yet)
    for count, piece in enumerate(_WORDS.findall(content), 1):
        chunk({"content": piece})
        sent += piece
        pause_point(count, sent)
    for k, c in enumerate(calls):
        fn = c["function"]
        chunk(
            {
                "tool_calls": [
                    {
                        "index": k,
                        "id": c["id"],
                        "type": "function",
                        "function": {"name": fn["name"], "arguments": ""},
                    }
                ]
            }
        )
        args = fn["arguments"]
        half = len(args) // 2
        for piece in (args[:half], args[half:]):
            if piece:
                chunk({"tool_calls": [{"index": k, "function": {"arguments": piece}}]})
    chunk({}, finish)
    if include_usage:
        write(
            "data: "
            + json.dumps(
                {
                    "id": cid,
                    "object": "chat.completion.chunk",
                    "created": created,
                    "model": model,
                    "system_fingerprint": None,
                    "choices": [],
                    "usage": usage,
                }
            )
            + "\n\n"
        )
    write("data: [DONE]\n\n")
    end_events(h)


def event_writer(h: ScriptedHandler, extra_headers: Mapping[str, str]) -> Callable[[str], None]:
    """Start a chunked ``text/event-stream`` answer; returns the function that sends one chunk."""
    h.send_response(200)
    h.send_header("Content-Type", "text/event-stream")
    h.send_header("Cache-Control", "no-cache")
    h.send_header("Transfer-Encoding", "chunked")
    for name, value in extra_headers.items():
        h.send_header(name, value)
    h.end_headers()

    def write(payload: str) -> None:
        data = payload.encode()
        h.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        h.wfile.flush()

    return write


def end_events(h: ScriptedHandler) -> None:
    """End a chunked answer started by :func:`event_writer`."""
    h.wfile.write(b"0\r\n\r\n")
    h.wfile.flush()
