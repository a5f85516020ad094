"""The scripted OpenAI-compatible server itself (``ScriptedOpenAIServer``; documented, re-exported
and run from the command line in ``scripted_server.py``): its lifecycle, what it received, and the
answer to each chat-completions request from the script, the responder or the cassette."""

from __future__ import annotations

import contextlib
import json
import math
import os
import socket
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from ..cassette import Cassette
from .script import ScriptEntry, check_entry, message_text, validate_script
from .scripted_cassette import answer_from_cassette
from .scripted_http import ScriptedHandler, ScriptedHTTPServer, stream_completion

__all__ = ["ScriptedOpenAIServer"]


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
        self._script: list[ScriptEntry] = validate_script(script)
        self._pos = 0
        self._responses = 0
        self._requests: list[dict[str, Any]] = []
        self._raw: list[bytes] = []
        self._httpd: ScriptedHTTPServer | None = None
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
        httpd = ScriptedHTTPServer((self.host, self.port), ScriptedHandler)
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
        new = validate_script(script) if script is not None else None
        with self._lock:
            if new is not None:
                self._script = new
            self._pos = 0
            self._responses = 0
            self._requests.clear()
            self._raw.clear()

    # -- script handling --------------------------------------------------- #
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

    def _from_cassette(self, h: ScriptedHandler, raw: bytes) -> bool:
        """Answer a POST from the cassette, if any (scripted_cassette.py); True when answered."""
        if self.cassette is None:
            return False
        return answer_from_cassette(h, self.cassette, raw, record=self._record,
                                    script_left=bool(self._script) or self.responder is not None)

    def _record(self, body: Any, raw: bytes) -> None:
        with self._lock:
            self._requests.append(body)
            self._raw.append(raw)

    def _handle_completion(self, h: ScriptedHandler, request: dict[str, Any], raw: bytes) -> None:
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
            entry = check_entry(entry, f"answer to request {n}")
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
            stream_completion(
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

