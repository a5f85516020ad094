"""The scripted OpenAI-compatible server itself (``ScriptedOpenAIServer``; documented, re-exported
and run from the command line in ``scripted_server.py``): its lifecycle, what it received, and the
answer to each chat-completions or Responses API request (``scripted_responses.py``) from the
script, the responder or the cassette, with OpenAI-style ``cached_tokens``."""

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
from .scripted_http import ScriptedHandler, ScriptedHTTPServer, end_events, event_writer, split_words, stream_completion
from .scripted_responses import PrefixCache, chat_view, output_message, prompt_text, response_body, stream_response

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
        prompt_cache: bool = True,
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
        self._paths: list[str] = []
        self._usages: list[dict[str, Any]] = []  # the usage of each answer, as reported
        self._prefixes: list[int] = []  # per answer: tokens of its prompt's longest prefix seen before
        self._stored: dict[str, list[dict[str, Any]]] = {}  # response id -> its conversation (Responses API)
        self._ids = 0  # response ids, never reused (the stored conversations outlive reset())
        self._answered: list[str] = []  # the id of each Responses API answer
        self.prompt_cache = PrefixCache() if prompt_cache else None
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

    def track_connection(self, conn: socket.socket, *, add: bool) -> None:
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
        """Parsed JSON bodies of the /chat/completions and /responses requests received, in order."""
        with self._lock:
            return list(self._requests)

    @property
    def request_paths(self) -> list[str]:
        """The path of each request of :attr:`requests` (``/chat/completions``, ``/responses``)."""
        with self._lock:
            return list(self._paths)

    @property
    def reported_usage(self) -> list[dict[str, Any]]:
        """The usage each answer reported (chat-completions form: ``prompt_tokens``,
        ``prompt_tokens_details.cached_tokens``...), in order; errors report none."""
        with self._lock:
            return list(self._usages)

    @property
    def shared_prefix_tokens(self) -> list[int]:
        """Per answered request (as :attr:`reported_usage`): the tokens (characters / 4) of the
        longest prefix its prompt shares with an earlier prompt of its ``prompt_cache_key``, exactly
        (``cached_tokens`` is that, from 1024 tokens on and in steps of 128); empty when the prompt
        cache is off."""
        with self._lock:
            return list(self._prefixes)

    @property
    def response_ids(self) -> list[str]:
        """The id of each answer to a /responses request, in order (what a later request's
        ``previous_response_id`` names)."""
        with self._lock:
            return list(self._answered)

    def forget_responses(self) -> None:
        """Drop the stored Responses conversations: a later ``previous_response_id`` gets HTTP 404
        (as when OpenAI no longer has the response)."""
        with self._lock:
            self._stored.clear()

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
            self._paths.clear()
            self._usages.clear()
            self._prefixes.clear()
            self._answered.clear()
        if self.prompt_cache is not None:
            self.prompt_cache.clear()

    # -- script handling --------------------------------------------------- #
    def _next_entry(self, request: dict[str, Any], raw: bytes, path: str) -> tuple[Any, int, int]:
        """Record the request and pick its script entry (callables not yet called).

        Returns ``(entry or None, response number, script entries consumed)``.
        """
        with self._lock:
            self._requests.append(request)
            self._raw.append(raw)
            self._paths.append(path)
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

    def reply_from_cassette(self, h: ScriptedHandler, raw: bytes) -> bool:
        """Answer a POST from the cassette, if any (scripted_cassette.py); True when answered."""
        if self.cassette is None:
            return False
        return answer_from_cassette(h, self.cassette, raw, record=self._record,
                                    script_left=bool(self._script) or self.responder is not None)

    def _record(self, body: Any, raw: bytes, path: str | None = None) -> None:
        with self._lock:
            self._requests.append(body)
            self._raw.append(raw)
            self._paths.append(path or "")

    def handle_completion(self, h: ScriptedHandler, request: dict[str, Any], raw: bytes) -> None:
        self._answer(h, request, raw, request, "/chat/completions")

    def handle_responses(self, h: ScriptedHandler, request: dict[str, Any], raw: bytes) -> None:
        """A Responses API request: the script reads it as a chat-completions request holding the
        whole conversation (``scripted_responses.chat_view``); an unknown ``previous_response_id``
        gets HTTP 404, as from OpenAI."""
        previous = request.get("previous_response_id")
        history: list[dict[str, Any]] = []
        if previous is not None:
            with self._lock:
                stored = self._stored.get(str(previous))
            if stored is None:
                self._record(request, raw, "/responses")
                h.send_api_error(
                    404, f"Previous response with id '{previous}' not found.", type_="invalid_request_error",
                    code="previous_response_not_found", headers={"x-should-retry": "false"},
                )
                return
            history = stored
        self._answer(h, request, raw, chat_view(request, history), "/responses")

    def _answer(self, h: ScriptedHandler, request: dict[str, Any], raw: bytes, view: dict[str, Any], path: str) -> None:
        """Answer a request from its script entry; ``view``: the request as chat completions."""
        entry, n, consumed = self._next_entry(request, raw, path)
        if entry is None:
            h.send_api_error(
                500,
                f"scripted server: script exhausted after {consumed} requests",
                type_="server_error",
                code="script_exhausted",
                headers={"x-should-retry": "false"},
            )
            return
        try:
            if callable(entry):
                entry = entry(view)
            entry = check_entry(entry, f"answer to request {n}")
        except Exception as exc:  # a bad callable should fail the test loudly, not hang
            h.send_api_error(
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
            h.send_api_error(
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
        usage = self._usage(view, content, calls)
        if isinstance(entry.get("usage"), Mapping):
            if "prompt_tokens" in entry["usage"]:
                usage.pop("prompt_tokens_details", None)  # (cached tokens of another count)
            usage.update(entry["usage"])
            usage["total_tokens"] = usage.get("prompt_tokens", 0) + usage.get("completion_tokens", 0)
        with self._lock:
            self._usages.append(usage)
        model = str(entry.get("model") or self.model)
        if path == "/responses":
            self._respond(h, request, view, entry, content, calls, usage, model, extra_headers)
            return
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
        h.send_json(
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

    def _respond(
        self, h: ScriptedHandler, request: Mapping[str, Any], view: Mapping[str, Any], entry: Mapping[str, Any],
        content: str, calls: list[dict[str, Any]], usage: dict[str, Any], model: str, headers: dict[str, str],
    ) -> None:
        """Answer a Responses API request (a Response object, or its events when streamed) and keep
        its conversation for a later ``previous_response_id`` (unless ``store`` is false)."""
        with self._lock:
            self._ids += 1
            rid = f"resp_scripted{self._ids:06d}"
            self._answered.append(rid)
            if request.get("store") is not False:
                self._stored[rid] = [*view.get("messages", []), output_message(content, calls)]
        body = response_body(rid, model, request, content, calls, usage)
        if not request.get("stream"):
            h.send_json(200, body, headers)
            return
        write = event_writer(h, headers)
        delay = float(entry.get("chunk_delay_s", 0.0) or 0.0)

        def event(kind: str, data: dict[str, Any]) -> None:
            write(f"event: {kind}\ndata: {json.dumps(data)}\n\n")
            if delay > 0:
                time.sleep(delay)

        stream_response(event, body, split_words(content), self._pause_point(entry))
        end_events(h)

    def _usage(self, request: Mapping[str, Any], content: str, calls: list[dict[str, Any]]) -> dict[str, Any]:
        """Usage estimated from the request (chat-completions form) and the answer, with the cached
        prompt tokens (``scripted_responses.PrefixCache``) unless the prompt cache is off."""
        prompt = json.dumps(request.get("messages") or []) + json.dumps(request.get("tools") or [])
        completion = content + "".join(c["function"]["arguments"] for c in calls)
        p = math.ceil(len(prompt) / 4)
        c = math.ceil(len(completion) / 4)
        usage: dict[str, Any] = {"prompt_tokens": p, "completion_tokens": c, "total_tokens": p + c}
        if self.prompt_cache is not None:
            key = request.get("prompt_cache_key")
            text = prompt_text(request)  # (as long as the text p counts)
            cached, shared = self.prompt_cache.cached(None if key is None else str(key), text, p)
            usage["prompt_tokens_details"] = {"cached_tokens": cached}
            with self._lock:
                self._prefixes.append(p if shared == len(text) else min(p, shared // 4))
        return usage

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

