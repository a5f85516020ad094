"""Record and replay at the HTTP layer: httpx transports handed to the OpenAI SDK.

:class:`CassetteSession` is what :func:`~smart_agent.cassette.recording` and
:func:`~smart_agent.cassette.replaying` return. While one is active (a context variable, so
concurrent runs in one process may each use their own), ``models.load_chat_model`` gives
``openai:`` models (``models.CASSETTE_PROVIDERS``) the session's ``http_client`` /
``http_async_client``:

* recording: every request goes to the network through httpx's own transport; its response
  streams to the client unchanged while a copy is kept, and when the client has read the whole
  body the interaction is written to the folder (cassette/store.py);
* replaying: nothing goes to the network; the request is answered from the cassette
  (cassette/store.py ``Cassette.find``), or with an HTTP 400 carrying ``x-should-retry: false``
  and the header :data:`MISS_HEADER`, which ``models.invoke_model`` turns into a
  :class:`~smart_agent.cassette.store.ReplayMiss` (one line naming the request).

The transports are built on the ``httpx`` module the installed OpenAI SDK uses (``httpx2`` for
``openai>=3``, as ``langchain_openai._compat`` resolves it).
"""

from __future__ import annotations

import contextvars
import functools
import json
import os
from typing import Any

from .store import Cassette, Interaction, Recorder, ReplayMiss, kept_headers, parse_body

#: Response header of a replay miss (its value: "miss").
MISS_HEADER = "x-smart-agent-replay"

_active: contextvars.ContextVar[CassetteSession | None] = contextvars.ContextVar("smart_agent_cassette", default=None)


def active_session() -> CassetteSession | None:
    """The recording or replaying session of the current context, if any."""
    return _active.get()


def sdk_httpx() -> Any:
    """The httpx module whose clients the OpenAI SDK accepts: ``httpx2`` (API-identical) from
    ``openai`` 3 on, ``httpx`` before."""
    import importlib
    import re

    import openai

    found = re.match(r"\D*(\d+)", getattr(openai, "__version__", "") or "")
    return importlib.import_module("httpx2" if found and int(found.group(1)) >= 3 else "httpx")


class CassetteSession:
    """Records model traffic into, or replays it from, a cassette folder (see the package
    docstring). Use it as a context manager (``with`` or ``async with``); nested sessions are
    allowed, the innermost wins. ``misses`` lists the replay misses it answered.

    ``strict`` (replay): when the block ends without an exception but a miss was answered
    inside it - code that catches every error (a fleet worker, a tool, a sub-agent) turned it
    into a failed step and the run went on - the first miss is raised at the end of the block,
    so a replay never passes with a request the cassette did not hold."""

    def __init__(self, folder: str | os.PathLike[str], mode: str, *, strict: bool = True) -> None:
        if mode not in ("record", "replay"):
            raise ValueError(f"mode must be 'record' or 'replay', not {mode!r}")
        self.folder = str(folder)
        self.mode = mode
        self.cassette = Cassette(folder) if mode == "replay" else None
        self.recorder = Recorder(folder) if mode == "record" else None
        self.misses: list[ReplayMiss] = []
        self.strict = strict
        self._clients: dict[str, Any] | None = None
        self._tokens: list[contextvars.Token] = []

    # -- activation -------------------------------------------------------------
    def __enter__(self) -> CassetteSession:
        self._tokens.append(_active.set(self))
        return self

    def __exit__(self, exc_type: Any, *exc: Any) -> None:
        _active.reset(self._tokens.pop())
        if exc_type is None and self.strict and self.misses:
            raise self.misses[0]

    async def __aenter__(self) -> CassetteSession:
        return self.__enter__()

    async def __aexit__(self, exc_type: Any, *exc: Any) -> None:
        _active.reset(self._tokens.pop())
        clients, self._clients = self._clients, None
        if clients:
            await clients["http_async_client"].aclose()
            clients["http_client"].close()
        if exc_type is None and self.strict and self.misses:
            raise self.misses[0]

    # -- clients ----------------------------------------------------------------
    def client_kwargs(self) -> dict[str, Any]:
        """``http_client`` and ``http_async_client`` for ``ChatOpenAI(...)`` (the same two
        objects on every call, so models built with them are cached once per session)."""
        if self._clients is None:
            from ..models.usage import budget_hooks

            httpx = sdk_httpx()
            sync_cls, async_cls = _transport_classes(httpx)
            self._clients = {
                "http_client": httpx.Client(transport=sync_cls(self, httpx.HTTPTransport()), follow_redirects=True),
                "http_async_client": httpx.AsyncClient(
                    transport=async_cls(self, httpx.AsyncHTTPTransport()), follow_redirects=True,
                    event_hooks=budget_hooks(),  # (the client's retries are model calls of the run)
                ),
            }
        return dict(self._clients)

    # -- replay -------------------------------------------------------------------
    def replay(self, request: Any, httpx: Any) -> Any:
        """The recorded response to ``request`` (already read), or a miss response."""
        assert self.cassette is not None
        body = parse_body(request.content)
        try:
            found = self.cassette.answer(request.url.path, body)
        except ReplayMiss as miss:
            self.misses.append(miss)
            error = {"error": {"message": str(miss), "type": "replay_miss", "param": None, "code": "replay_miss"}}
            return httpx.Response(
                400, json=error, headers={MISS_HEADER: "miss", "x-should-retry": "false"}, request=request
            )
        return httpx.Response(found.status, headers=found.headers, content=found.content, request=request)

    # -- record -------------------------------------------------------------------
    def recorded(self, request: Any, seq: int, status: int, headers: Any, raw: bytes, httpx: Any) -> None:
        """Write one interaction (``raw``: the body as it came off the wire, maybe compressed)."""
        assert self.recorder is not None
        decoded = httpx.Response(status, headers=headers, content=raw)
        try:
            content = decoded.read()
        except Exception:  # a body its declared encoding cannot decode: kept as received
            content = raw
        self.recorder.write(
            Interaction(
                seq=seq, method=request.method, url=str(request.url), path=request.url.path,
                body=parse_body(request.content), status=status, headers=kept_headers(headers), content=content,
            )  # fmt: skip
        )

    def abandon(self, seq: int) -> None:
        """Free a claimed number whose request got no whole response (a connection error, a
        stream closed before its end)."""
        assert self.recorder is not None
        path = os.path.join(self.folder, f"{seq:04d}.json")
        if os.path.exists(path) and os.path.getsize(path) == 0:
            os.remove(path)


def miss_from_error(exc: BaseException) -> ReplayMiss | None:
    """The ReplayMiss a client error stands for (an HTTP response of a replay miss; or the
    ReplayMiss itself), if any."""
    if isinstance(exc, ReplayMiss):
        return exc
    response = getattr(exc, "response", None)
    headers = getattr(response, "headers", None)
    if headers is None or headers.get(MISS_HEADER) != "miss":
        return None
    try:
        message = json.loads(response.content)["error"]["message"]  # type: ignore[union-attr]
    except Exception:
        message = "replay: no recorded response for a request"
    return ReplayMiss(str(message))


@functools.cache
def _transport_classes(httpx: Any) -> tuple[type, type]:
    """The sync and async transports, and the stream that copies a recorded body, for ``httpx``."""

    class Tee(httpx.SyncByteStream, httpx.AsyncByteStream):
        """A response body passed through to the client while a copy is kept: written when
        the client has read all of it, dropped when it closed the body before its end (a
        cancelled run), so a cassette never holds a cut stream."""

        def __init__(self, stream: Any, done: Any, dropped: Any) -> None:
            self._stream, self._done, self._dropped, self._finished = stream, done, dropped, False
            self._parts: list[bytes] = []

        def _finish(self, complete: bool) -> None:
            if not self._finished:
                self._finished = True
                if complete:
                    self._done(b"".join(self._parts))
                else:
                    self._dropped()

        def __iter__(self) -> Any:
            for chunk in self._stream:
                self._parts.append(chunk)
                yield chunk
            self._finish(True)

        async def __aiter__(self) -> Any:
            async for chunk in self._stream:
                self._parts.append(chunk)
                yield chunk
            self._finish(True)

        def close(self) -> None:
            try:
                self._stream.close()
            finally:
                self._finish(False)

        async def aclose(self) -> None:
            try:
                await self._stream.aclose()
            finally:
                self._finish(False)

    def teed(session: CassetteSession, request: Any, seq: int, response: Any) -> Any:
        def done(raw: bytes) -> None:
            session.recorded(request, seq, response.status_code, response.headers, raw, httpx)

        def dropped() -> None:
            session.abandon(seq)

        return httpx.Response(
            response.status_code, headers=response.headers, stream=Tee(response.stream, done, dropped),
            extensions=response.extensions, request=request,
        )  # fmt: skip

    class SyncTransport(httpx.BaseTransport):
        def __init__(self, session: CassetteSession, inner: Any) -> None:
            self.session, self.inner = session, inner

        def handle_request(self, request: Any) -> Any:
            request.read()
            if self.session.mode == "replay":
                return self.session.replay(request, httpx)
            assert self.session.recorder is not None
            seq = self.session.recorder.claim()
            try:
                response = self.inner.handle_request(request)
            except BaseException:
                self.session.abandon(seq)
                raise
            return teed(self.session, request, seq, response)

        def close(self) -> None:
            self.inner.close()

    class AsyncTransport(httpx.AsyncBaseTransport):
        def __init__(self, session: CassetteSession, inner: Any) -> None:
            self.session, self.inner = session, inner

        async def handle_async_request(self, request: Any) -> Any:
            await request.aread()
            if self.session.mode == "replay":
                return self.session.replay(request, httpx)
            assert self.session.recorder is not None
            seq = self.session.recorder.claim()
            try:
                response = await self.inner.handle_async_request(request)
            except BaseException:
                self.session.abandon(seq)
                raise
            return teed(self.session, request, seq, response)

        async def aclose(self) -> None:
            await self.inner.aclose()

    return SyncTransport, AsyncTransport
