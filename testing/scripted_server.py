"""A scripted OpenAI-compatible chat-completions server (stdlib only).

Used by tests, benchmarks and the offline ``smart-agent demo``: point the real
``langchain_openai.ChatOpenAI`` (or any OpenAI client) at ``server.base_url`` and
every ``POST /v1/chat/completions`` is answered from a script.

Script entries (consumed in order; each a dict, a callable ``f(request) -> dict``,
or a plain string as shorthand for ``{"content": ...}``)::

    {"content": "text"}
    {"tool_calls": [{"name": "calculator", "arguments": {"expression": "37*43"}}],
     "content": ""}
    {"error": {"status": 401, "message": "bad key", "type": "invalid_request_error"}}

Optional keys on any entry:

* ``delay_s`` – sleep this long before answering (simulated latency).
* ``chunk_delay_s`` – sleep between streamed chunks.
* ``pause_after`` – a streamed answer stops after this many words of its content (0: before
  the first) until ``server.release_stream()`` (or ``pause_s`` seconds, default 60, pass):
  ``server.stream_paused`` is set there and ``server.streamed_text`` holds what was sent so
  far, so a test sees what a client shows before the rest exists.
* ``finish_reason`` – override (default ``"tool_calls"`` / ``"stop"``).
* ``usage`` – dict overriding the computed usage numbers.
* ``headers`` – extra response headers.
* ``retry`` (error entries) – by default error responses carry
  ``x-should-retry: false`` so the OpenAI client does not silently retry and
  consume further script entries; ``"retry": True`` omits that header (then the
  client's normal retry policy applies).

Tool-call ``arguments`` may be a dict (JSON-encoded for you) or a string (sent
verbatim, e.g. to test malformed arguments). Tool-call ids are generated as
``call_<n>_<k>`` (n = response number, k = index) unless an ``id`` is given.

``responder=`` is a callable used for every request instead of a list (or once
the list is exhausted). With neither left, the server answers HTTP 500
``scripted server: script exhausted after N requests`` so a test fails loudly.

``cassette=DIR`` (CLI ``--cassette DIR``) answers every POST the cassette folder holds
(recorded with ``smart-agent run --record DIR``; matched as ``--replay`` matches, see
docs/record_replay.md) with the recorded status, headers and body, byte for byte; a request it
does not hold goes to the script or responder, or, with neither, gets HTTP 400 naming the
request (``x-smart-agent-replay: miss``).

Token usage is approximate: ``prompt_tokens = ceil(len(json.dumps(messages) +
json.dumps(tools or [])) / 4)`` and ``completion_tokens = ceil(len(content +
all tool-call argument strings) / 4)``.

CLI::

    python -m smart_agent.testing.scripted_server --script script.json [--port 0] [--loop]
    python -m smart_agent.testing.scripted_server --cassette DIR [--port 0]

prints exactly one line ``BASE_URL=http://127.0.0.1:PORT/v1`` once listening
and serves until killed.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import re
import signal
import socket
import sys
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

# The script entries and request readers live in script.py (the demo's rules use them
# without the server); they stay importable from here.
from ..cassette import MISS_HEADER, Cassette, parse_body
from .script import (
    ScriptEntry,
    error,
    last_tool_message,
    message_text,
    text,
    tool_call,
    tool_call_names,
    tool_calls,
    tool_messages,
)

__all__ = [
    "ScriptedOpenAIServer",
    "ScriptEntry",
    "text",
    "tool_call",
    "tool_calls",
    "error",
    "tool_messages",
    "last_tool_message",
    "tool_call_names",
    "message_text",
    "main",
]

# --------------------------------------------------------------------------- #
# Server
# --------------------------------------------------------------------------- #
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


class _HTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    owner: ScriptedOpenAIServer

    def handle_error(self, request: Any, client_address: Any) -> None:  # quiet
        pass


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "ScriptedOpenAI/1.0"
    timeout = 120  # idle keep-alive connections are dropped eventually
    server: _HTTPServer

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        pass

    def setup(self) -> None:
        super().setup()
        # Headers and body go out as separate writes: avoid the ~40 ms Nagle/delayed-ACK stall.
        with contextlib.suppress(OSError):
            self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.server.owner._track(self.connection, add=True)

    def finish(self) -> None:
        try:
            super().finish()
        finally:
            self.server.owner._track(self.connection, add=False)

    # -- plumbing ---------------------------------------------------------- #
    def _send_json(self, status: int, body: Any, headers: Mapping[str, str] | None = None) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for k, v in (headers or {}).items():
            self.send_header(k, str(v))
        self.end_headers()
        self.wfile.write(data)
        self.wfile.flush()

    def _send_error(
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
        self._send_json(status, body, headers)

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
                self._send_json(
                    200,
                    {
                        "object": "list",
                        "data": [{"id": owner.model, "object": "model", "created": 0, "owned_by": "scripted"}],
                    },
                )
            else:
                self._send_error(404, f"scripted server: unknown path {self.path}", headers={"x-should-retry": "false"})
        except (BrokenPipeError, ConnectionError, OSError):
            self.close_connection = True

    def do_POST(self) -> None:
        try:
            raw = self._read_body()
            if self.server.owner.cassette is not None and self.server.owner._from_cassette(self, raw):
                return
            if self._path() != "/chat/completions":
                self._send_error(404, f"scripted server: unknown path {self.path}", headers={"x-should-retry": "false"})
                return
            try:
                request = json.loads(raw.decode("utf-8"))
                if not isinstance(request, dict):
                    raise ValueError("request body must be a JSON object")
            except (ValueError, UnicodeDecodeError) as exc:
                self._send_error(
                    400, f"scripted server: malformed JSON body: {exc}", headers={"x-should-retry": "false"}
                )
                return
            self.server.owner._handle_completion(self, request, raw)
        except (BrokenPipeError, ConnectionError, OSError):
            # Client went away (e.g. its timeout fired during a delay).
            self.close_connection = True


class ScriptedOpenAIServer:
    """An in-process OpenAI-compatible server answering from a script.

    >>> with ScriptedOpenAIServer([text("hi")]) as srv:
    ...     ChatOpenAI(base_url=srv.base_url, api_key="x", model="scripted-model")
    """

    def __init__(
        self,
        script: Iterable[ScriptEntry] | None = None,
        *,
        responder: Callable[[dict[str, Any]], dict[str, Any]] | None = None,
        host: str = "127.0.0.1",
        port: int = 0,
        model: str = "scripted-model",
        default_delay_s: float = 0.0,
        loop: bool = False,
        cassette: str | os.PathLike[str] | None = None,
    ) -> None:
        self.host = host
        self.port = port
        self.model = model
        self.default_delay_s = float(default_delay_s)
        self.responder = responder
        self.loop = loop
        self._lock = threading.Lock()
        self._script: list[ScriptEntry] = self._validate_script(script)
        self._pos = 0
        self._responses = 0
        self._requests: list[dict[str, Any]] = []
        self._raw: list[bytes] = []
        self._httpd: _HTTPServer | None = None
        self._thread: threading.Thread | None = None
        self._conns: set[socket.socket] = set()
        self.stream_paused = threading.Event()  # a stream reached its pause_after
        self._stream_release = threading.Event()
        self.streamed_text = ""  # the content words streamed so far by the current stream
        self.cassette = Cassette(cassette) if cassette is not None else None

    # -- lifecycle --------------------------------------------------------- #
    def start(self) -> ScriptedOpenAIServer:
        if self._httpd is not None:
            return self
        httpd = _HTTPServer((self.host, self.port), _Handler)
        httpd.owner = self
        self._httpd = httpd
        self.port = httpd.server_address[1]
        self._thread = threading.Thread(
            target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, name="scripted-openai-server", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        httpd, self._httpd = self._httpd, None
        if httpd is None:
            return
        self._stream_release.set()  # a stream waiting at its pause ends now
        httpd.shutdown()
        httpd.server_close()
        with self._lock:
            conns = list(self._conns)
            self._conns.clear()
        for c in conns:  # drop idle keep-alive connections
            with contextlib.suppress(OSError):
                c.shutdown(socket.SHUT_RDWR)
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    def __enter__(self) -> ScriptedOpenAIServer:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    def _track(self, conn: socket.socket, *, add: bool) -> None:
        with self._lock:
            if add:
                self._conns.add(conn)
            else:
                self._conns.discard(conn)

    # -- inspection -------------------------------------------------------- #
    @property
    def base_url(self) -> str:
        if self._httpd is None:
            raise RuntimeError("ScriptedOpenAIServer is not started; call start() or use it as a context manager")
        return f"http://{self.host}:{self.port}/v1"

    @property
    def requests(self) -> list[dict[str, Any]]:
        """Parsed JSON bodies of the /chat/completions requests received, in order."""
        with self._lock:
            return list(self._requests)

    @property
    def remaining(self) -> int:
        """Script entries not consumed yet (ignores ``loop``/``responder``)."""
        with self._lock:
            return len(self._script) - self._pos

    def offered_tools(self, i: int = -1) -> list[str]:
        """Names of the tools offered in request ``i`` ([] when none)."""
        req = self.requests[i]
        names = []
        for t in req.get("tools") or []:
            fn = t.get("function") if isinstance(t, Mapping) else None
            if isinstance(fn, Mapping) and "name" in fn:
                names.append(str(fn["name"]))
            elif isinstance(t, Mapping) and "name" in t:
                names.append(str(t["name"]))
        return names

    def request_chars(self, i: int = -1) -> int:
        """Length of the raw body of request ``i``."""
        with self._lock:
            return len(self._raw[i])

    def reset(self, script: Iterable[ScriptEntry] | None = None) -> None:
        """Forget recorded requests. ``script`` replaces the script; ``None`` rewinds it."""
        new = self._validate_script(script) if script is not None else None
        with self._lock:
            if new is not None:
                self._script = new
            self._pos = 0
            self._responses = 0
            self._requests.clear()
            self._raw.clear()

    # -- script handling --------------------------------------------------- #
    @staticmethod
    def _validate_script(script: Iterable[ScriptEntry] | None) -> list[ScriptEntry]:
        entries = list(script or [])
        for i, e in enumerate(entries):
            if callable(e) or isinstance(e, str):
                continue
            ScriptedOpenAIServer._check_entry(e, f"script entry {i}")
        return entries

    @staticmethod
    def _check_entry(e: Any, where: str) -> dict[str, Any]:
        if isinstance(e, str):
            return {"content": e}
        if not isinstance(e, Mapping):
            raise TypeError(f"scripted server: {where} must be a dict, got {type(e).__name__}")
        if not ({"content", "tool_calls", "error"} & set(e)):
            raise ValueError(f"scripted server: {where} needs 'content', 'tool_calls' or 'error': {e!r}")
        if "error" in e and not isinstance(e["error"], Mapping):
            raise ValueError(f"scripted server: {where}: 'error' must be a dict")
        for k, tc in enumerate(e.get("tool_calls") or []):
            if not isinstance(tc, Mapping) or not tc.get("name"):
                raise ValueError(f"scripted server: {where}: tool call {k} needs a 'name': {tc!r}")
        return dict(e)

    def _next_entry(self, request: dict[str, Any], raw: bytes) -> tuple[Any, int, int]:
        """Record the request and pick its script entry (callables not yet called).

        Returns ``(entry or None, response number, script entries consumed)``.
        """
        with self._lock:
            self._requests.append(request)
            self._raw.append(raw)
            self._responses += 1
            n = self._responses
            if self._pos < len(self._script):
                entry: Any = self._script[self._pos]
                self._pos += 1
                if self.loop and self._pos >= len(self._script):
                    self._pos = 0
                return entry, n, self._pos
            if self.responder is not None:
                return self.responder, n, self._pos
            return None, n, self._pos

    def _from_cassette(self, h: _Handler, raw: bytes) -> bool:
        """Answer a POST from the cassette (cassette/store.py: exact, then tolerant match) as it
        was recorded; True when answered (a miss too, when no script or responder is left)."""
        assert self.cassette is not None
        path = h.path.split("?", 1)[0]
        body = parse_body(raw)
        found = self.cassette.find(path, body)
        if found is None:
            if self._script or self.responder is not None:
                return False  # the script answers what the cassette does not hold
            with self._lock:
                self._requests.append(body)
                self._raw.append(raw)
            h._send_error(400, str(self.cassette.miss(path, body)), type_="replay_miss", code="replay_miss",
                          headers={"x-should-retry": "false", MISS_HEADER: "miss"})
            return True
        with self._lock:
            self._requests.append(body)
            self._raw.append(raw)
        h.send_response(found.status)
        for name, value in found.headers.items():
            h.send_header(name, value)
        h.send_header("Content-Length", str(len(found.content)))
        h.end_headers()
        h.wfile.write(found.content)
        h.wfile.flush()
        return True

    def _handle_completion(self, h: _Handler, request: dict[str, Any], raw: bytes) -> None:
        entry, n, consumed = self._next_entry(request, raw)
        if entry is None:
            h._send_error(
                500,
                f"scripted server: script exhausted after {consumed} requests",
                type_="server_error",
                code="script_exhausted",
                headers={"x-should-retry": "false"},
            )
            return
        try:
            if callable(entry):
                entry = entry(request)
            entry = self._check_entry(entry, f"answer to request {n}")
        except Exception as exc:  # a bad callable should fail the test loudly, not hang
            h._send_error(
                500,
                f"scripted server: script entry for request {n} failed: {type(exc).__name__}: {exc}",
                type_="server_error",
                code="script_error",
                headers={"x-should-retry": "false"},
            )
            return

        delay = float(entry.get("delay_s", self.default_delay_s) or 0.0)
        if delay > 0:
            time.sleep(delay)

        extra_headers = {str(k): str(v) for k, v in (entry.get("headers") or {}).items()}
        if "error" in entry:
            err = entry["error"]
            headers = dict(extra_headers)
            if not entry.get("retry", False):
                headers.setdefault("x-should-retry", "false")
            h._send_error(
                int(err.get("status", 500)),
                str(err.get("message", "scripted error")),
                type_=err.get("type"),
                code=err.get("code"),
                headers=headers,
            )
            return

        content = entry.get("content")
        content = message_text(content) if content is not None else ""
        calls = []
        for k, tc in enumerate(entry.get("tool_calls") or []):
            args = tc.get("arguments", {})
            if args is None:
                args = {}
            calls.append(
                {
                    "id": str(tc.get("id") or f"call_{n}_{k}"),
                    "type": "function",
                    "function": {
                        "name": str(tc["name"]),
                        "arguments": args if isinstance(args, str) else json.dumps(args),
                    },
                }
            )
        finish = entry.get("finish_reason") or ("tool_calls" if calls else "stop")
        usage = self._usage(request, content, calls)
        if isinstance(entry.get("usage"), Mapping):
            usage.update(entry["usage"])
            usage["total_tokens"] = usage.get("prompt_tokens", 0) + usage.get("completion_tokens", 0)
        model = str(entry.get("model") or self.model)
        cid = f"chatcmpl-scripted-{n}"
        created = int(time.time())

        if request.get("stream"):
            include_usage = bool((request.get("stream_options") or {}).get("include_usage"))
            self._stream(
                h, cid, created, model, content, calls, finish, usage, include_usage,
                float(entry.get("chunk_delay_s", 0.0) or 0.0), extra_headers, self._pause_point(entry),
            )
            return

        message: dict[str, Any] = {"role": "assistant", "content": content or (None if calls else ""), "refusal": None}
        if calls:
            message["tool_calls"] = calls
        h._send_json(
            200,
            {
                "id": cid,
                "object": "chat.completion",
                "created": created,
                "model": model,
                "choices": [{"index": 0, "message": message, "finish_reason": finish, "logprobs": None}],
                "usage": usage,
                "system_fingerprint": None,
            },
            extra_headers,
        )

    @staticmethod
    def _usage(request: Mapping[str, Any], content: str, calls: list[dict[str, Any]]) -> dict[str, int]:
        prompt = json.dumps(request.get("messages") or []) + json.dumps(request.get("tools") or [])
        completion = content + "".join(c["function"]["arguments"] for c in calls)
        p = math.ceil(len(prompt) / 4)
        c = math.ceil(len(completion) / 4)
        return {"prompt_tokens": p, "completion_tokens": c, "total_tokens": p + c}

    def release_stream(self) -> None:
        """Let a stream paused at its ``pause_after`` go on."""
        self._stream_release.set()

    def _pause_point(self, entry: Mapping[str, Any]) -> Callable[[int, str], None]:
        """Called after each streamed word (its count, the text so far): records the text, and
        at ``pause_after`` words waits for :meth:`release_stream` (at most ``pause_s``)."""
        after = entry.get("pause_after")
        limit = float(entry.get("pause_s", 60.0))
        self.streamed_text = ""

        def point(count: int, sent: str) -> None:
            self.streamed_text = sent
            if after is not None and count == int(after):
                self.stream_paused.set()
                self._stream_release.wait(limit)

        return point

    @staticmethod
    def _stream(
        h: _Handler,
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
        h.wfile.write(b"0\r\n\r\n")
        h.wfile.flush()


# --------------------------------------------------------------------------- #
# CLI
# --------------------------------------------------------------------------- #
def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m smart_agent.testing.scripted_server",
        description="Serve a scripted OpenAI-compatible /v1/chat/completions endpoint.",
    )
    src = parser.add_mutually_exclusive_group(required=True)
    src.add_argument("--script", help="JSON file holding a list of script entries")
    src.add_argument("--demo", action="store_true", help="answer with the rule-based `smart-agent demo` model")
    src.add_argument(
        "--cassette", metavar="DIR", help="answer the requests recorded in this cassette folder (smart-agent --record)"
    )
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--model", default="scripted-model")
    parser.add_argument("--loop", action="store_true", help="repeat the script forever")
    parser.add_argument("--delay", type=float, default=0.0, help="default delay per answer in seconds")
    args = parser.parse_args(argv)

    script: list[Any] = []
    responder = None
    if args.demo:
        from .demo import demo_responder

        responder = demo_responder
    elif args.cassette:
        from ..cassette import CassetteError, load_interactions

        try:
            load_interactions(args.cassette)
        except CassetteError as exc:
            print(f"scripted_server: {exc}", file=sys.stderr)
            return 2
    else:
        try:
            with open(args.script, encoding="utf-8") as fh:
                script = json.load(fh)
            if not isinstance(script, list):
                raise ValueError("the script must be a JSON list of entries")
            ScriptedOpenAIServer._validate_script(script)
        except (OSError, ValueError, TypeError) as exc:
            print(f"scripted_server: cannot load {args.script}: {exc}", file=sys.stderr)
            return 2

    server = ScriptedOpenAIServer(
        script, responder=responder, host=args.host, port=args.port, model=args.model,
        default_delay_s=args.delay, loop=args.loop, cassette=args.cassette,
    )
    server.start()
    print(f"BASE_URL={server.base_url}", flush=True)

    stop = threading.Event()

    def _on_signal(signum: int, frame: Any) -> None:
        stop.set()

    for sig in (signal.SIGTERM, signal.SIGINT):
        with contextlib.suppress(ValueError, OSError):  # not in the main thread
            signal.signal(sig, _on_signal)
    try:
        while not stop.wait(0.5):
            pass
    except KeyboardInterrupt:
        pass
    finally:
        server.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
