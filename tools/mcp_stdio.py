"""The stdio transport of MCP servers (tools/mcp.py): JSON-RPC lines a hostile server cannot
turn into tracebacks, hangs or floods.

``mcp``'s own ``stdio_client`` printed a pydantic traceback for every line it could not read
(not JSON, nested too deeply, a lone surrogate escape...), left the request such a line
answered waiting for its whole timeout, held a line of any length whole (and re-joined it
for every chunk: a 50 MB tool list took longer than its start timeout), and passed the
server's stderr through to the CLI's, among its event lines. This transport, used with
``mcp.ClientSession`` like that one:

* reads stdout as bytes, one message a line: a line longer than :data:`MAX_MESSAGE_BYTES` is
  skipped as it arrives (never held whole); invalid UTF-8 is replaced;
* a line that does not start with ``{`` is noise (a banner, a print): written to the server's
  log and ignored;
* any other line is parsed with Python's ``json`` (a RecursionError is caught; a large line in
  a worker thread), bounded to ``MAX_JSON_DEPTH`` levels, lone surrogates replaced, and
  validated as a JSON-RPC message;
* a message that fails (malformed) fails the request it answers at once - its ``id``, read
  from the value or from the start of the line - or, when no id can be read, every pending
  request: the session raises ``McpError`` whose ``ErrorData.data`` is :data:`MALFORMED` and
  whose message says why. A parsed object without an id answers nothing: it is logged;
* a reply to no pending request, a notification or a server request that does not validate
  is logged and dropped (such a request is answered with a JSON-RPC error);
* the server's stderr goes to its log file, ``<data folder>/logs/mcp-<server>.log``, at most
  :data:`LOG_MAX_BYTES` a session (the rest is drained and dropped; a log already larger is
  started anew), never to the CLI's stderr;
* :attr:`StdioLink.closed` is set when stdout ends, before the session hears of it, so the
  session's own "Connection closed" error is told apart from a server's JSON-RPC error with
  the same code (-32000);
* at the end, stdin is closed and the process (its process group) given
  :data:`TERMINATE_S` to exit before SIGTERM, then SIGKILL; when the session is cancelled (a
  start that timed out) the group is killed at once.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import subprocess
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import anyio.abc
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

from ..config import settings
from ..replies import MAX_JSON_DEPTH, clean_value, value_depth_problem

__all__ = ["LOG_MAX_BYTES", "MALFORMED", "MAX_MESSAGE_BYTES", "StdioLink", "log_path", "stdio_transport"]

#: The longest JSON-RPC line read from a server (a tool list or a tool result); a longer one
#: is a malformed message.
MAX_MESSAGE_BYTES = 16 * 2**20
#: A line from this size on is parsed in a worker thread (the event loop's timers keep running).
THREAD_PARSE_BYTES = 2**20
#: The bytes of a server's stderr (and of smart-agent's notes) its log keeps for one session.
LOG_MAX_BYTES = 10 * 2**20
#: How long a server may take to exit once its stdin is closed, and after SIGTERM.
TERMINATE_S = 2.0
READ_CHUNK = 2**16
_BRACED_VAR = re.compile(r"\$\{([^}]+)\}")
# The id of a message, read from the start of a line that cannot be parsed: a top-level
# "id" before any nested object or list.
_LEADING_ID = re.compile(rb'^\s*\{[^{}\[\]]*?"id"\s*:\s*(-?\d{1,18}|"(?:[^"\\]|\\.){0,200}")')


class _Malformed:
    """The ``data`` of the JSON-RPC error a malformed reply becomes (no server can send it)."""

    def __repr__(self) -> str:
        return "MALFORMED"


MALFORMED = _Malformed()


def log_path(server: str) -> Path:
    """The log file of MCP server ``server``: its stderr and what smart-agent ignored of its stdout."""
    return settings.data_home() / "logs" / f"mcp-{server}.log"


class _Log:
    """The server's log file, written off the event loop, at most :data:`LOG_MAX_BYTES`."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.left = LOG_MAX_BYTES
        self._file: Any = None
        self._lock = anyio.Lock()

    async def open(self) -> None:
        """Append to the log (start it anew once it holds more than :data:`LOG_MAX_BYTES`)."""
        try:
            await anyio.Path(self.path.parent).mkdir(parents=True, exist_ok=True)
            path = anyio.Path(self.path)
            big = await path.exists() and (await path.stat()).st_size > LOG_MAX_BYTES
            self._file = await anyio.open_file(self.path, "wb" if big else "ab")
        except OSError:  # (a read-only data folder: the server runs, its log is dropped)
            self._file = None

    async def write(self, data: bytes) -> None:
        if self._file is None or self.left <= 0:
            return
        async with self._lock:
            if self.left <= 0:
                return
            chunk = data[: self.left]
            self.left -= len(chunk)
            with contextlib.suppress(OSError):
                await self._file.write(chunk)
                if self.left <= 0:
                    await self._file.write(b"\n[smart-agent] log limit reached; the rest of this session is dropped\n")
                await self._file.flush()

    async def note(self, text: str) -> None:
        await self.write(f"[smart-agent] {text}\n".encode("utf-8", "replace"))

    async def close(self) -> None:
        if self._file is not None:
            with contextlib.suppress(OSError):
                await self._file.aclose()


@dataclass
class StdioLink:
    """The two streams a ``ClientSession`` takes, and what the transport knows."""

    read: MemoryObjectReceiveStream[Any]
    write: MemoryObjectSendStream[Any]
    log: Path
    closed: bool = False  # the server's stdout ended (its process exited or closed it)
    ended: anyio.Event = field(default_factory=anyio.Event)  # set with ``closed``
    pending: set[Any] = field(default_factory=set)  # ids of requests sent and not answered yet


def _environment(env: dict[str, str] | None) -> dict[str, str]:
    """The server's environment: MCP's default (safe) variables plus ``env``, whose values may
    name variables as ``${NAME}`` (expanded; an unknown one is kept as it is)."""
    from mcp.client.stdio import get_default_environment

    base = get_default_environment()
    if env is None:
        return base
    expanded = {k: _BRACED_VAR.sub(lambda m: os.environ.get(m.group(1), m.group(0)), v) for k, v in env.items()}
    return {**base, **expanded}


def _clip(text: str, n: int = 200) -> str:
    text = " ".join(text.split())
    return text if len(text) <= n else text[:n] + "..."


def _first_error(exc: Exception) -> str:
    """One line of a pydantic ValidationError (its first problem), or of any error."""
    errors = getattr(exc, "errors", None)
    if callable(errors):
        with contextlib.suppress(Exception):
            first = errors()[0]
            where = ".".join(str(p) for p in first.get("loc", ())) or "(message)"
            return _clip(f"{where}: {first.get('msg')}")
    return _clip(str(exc) or type(exc).__name__)


def _parse(line: bytes) -> tuple[Any, Any, str | None]:
    """``(message, value, problem)`` of one JSON line: the validated JSON-RPC message (None when
    it fails), the parsed value (None when it is not JSON), and why it failed."""
    from mcp.types import JSONRPCMessage

    try:
        value = json.loads(line.decode("utf-8", "replace"))
    except RecursionError:
        return None, None, "JSON nested too deeply"
    except ValueError as exc:
        return None, None, f"not valid JSON ({_clip(str(exc), 80)})"
    problem = value_depth_problem(value, MAX_JSON_DEPTH)
    if problem:
        return None, None, problem
    value = clean_value(value)
    try:
        return JSONRPCMessage.model_validate(value), value, None
    except Exception as exc:  # a pydantic ValidationError: not a JSON-RPC message
        return None, value, f"not a JSON-RPC message ({_first_error(exc)})"


def _pending_key(request_id: Any) -> Any:
    """A reply's id as the session's requests are numbered (``"3"`` is request 3)."""
    if isinstance(request_id, str) and request_id.lstrip("-").isdigit():
        return int(request_id)
    return request_id


def _leading_id(line: bytes) -> Any:
    match = _LEADING_ID.match(line[:1000])
    if match is None:
        return None
    raw = match.group(1).decode("utf-8", "replace")
    with contextlib.suppress(ValueError):
        return _pending_key(json.loads(raw))
    return None


@contextlib.asynccontextmanager
async def stdio_transport(
    name: str, command: str, args: list[str], env: dict[str, str] | None = None, cwd: str | None = None
) -> AsyncIterator[StdioLink]:
    """Start the server ``command args`` and hold its streams for a ``ClientSession`` (see the
    module doc); ``name`` names its log. Raises OSError when the command cannot start."""
    from mcp.shared.message import SessionMessage
    from mcp.types import (
        INVALID_REQUEST,
        PARSE_ERROR,
        ErrorData,
        JSONRPCError,
        JSONRPCMessage,
        JSONRPCNotification,
        JSONRPCRequest,
        ServerNotification,
        ServerRequest,
    )

    log = _Log(log_path(name))
    await log.open()
    try:
        process = await anyio.open_process(
            [command, *args], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            env=_environment(env), cwd=cwd, start_new_session=True,
        )  # fmt: skip
    except BaseException:
        await log.close()
        raise
    await log.note(f"{time.strftime('%Y-%m-%d %H:%M:%S')} started {command} (pid {process.pid})")
    to_session, session_read = anyio.create_memory_object_stream[Any](0)
    session_write, from_session = anyio.create_memory_object_stream[Any](0)
    link = StdioLink(session_read, session_write, log.path)

    async def fail(request_id: Any, why: str, code: int = PARSE_ERROR) -> None:
        """Answer request ``request_id`` with the error a malformed reply becomes."""
        link.pending.discard(request_id)
        error = ErrorData(code=code, message=why, data=MALFORMED)
        await to_session.send(SessionMessage(JSONRPCMessage(JSONRPCError(jsonrpc="2.0", id=request_id, error=error))))

    async def malformed(line: bytes, value: Any, why: str) -> None:
        await log.note(f"malformed message ({why}): {_clip(line[:300].decode('utf-8', 'replace'))}")
        request_id = _pending_key(value.get("id")) if isinstance(value, dict) else _leading_id(line)
        if isinstance(request_id, (int, str)) and not isinstance(request_id, bool):
            if request_id in link.pending:
                await fail(request_id, f"malformed reply: {why}")
            return
        if value is not None:  # a JSON object that answers nothing
            return
        for pending in list(link.pending):  # (whose reply it was cannot be told)
            await fail(pending, f"malformed message: {why}")

    async def answer_bad_request(request_id: Any, why: str) -> None:
        error = JSONRPCError(jsonrpc="2.0", id=request_id, error=ErrorData(code=INVALID_REQUEST, message=why))
        with contextlib.suppress(anyio.ClosedResourceError, anyio.BrokenResourceError):
            await session_write.send(SessionMessage(JSONRPCMessage(error)))

    async def handle(line: bytes) -> None:
        text = line.strip()
        if not text:
            return
        if not text.startswith(b"{"):
            shown = _clip(text[:300].decode("utf-8", "replace"))
            await log.note(f"ignored a line that is not a JSON-RPC message: {shown}")
            return
        if len(text) >= THREAD_PARSE_BYTES:
            message, value, why = await anyio.to_thread.run_sync(_parse, text)
        else:
            message, value, why = _parse(text)
        if message is None:
            await malformed(text, value, why or "unreadable")
            return
        root = message.root
        if isinstance(root, JSONRPCRequest):
            try:
                ServerRequest.model_validate(root.model_dump(by_alias=True, mode="json", exclude_none=True))
            except Exception as exc:
                await log.note(f"refused a request it sent ({_first_error(exc)})")
                await answer_bad_request(root.id, f"invalid request: {_first_error(exc)}")
                return
        elif isinstance(root, JSONRPCNotification):
            try:
                ServerNotification.model_validate(root.model_dump(by_alias=True, mode="json", exclude_none=True))
            except Exception as exc:
                await log.note(f"ignored a notification ({_first_error(exc)})")
                return
        else:
            key = _pending_key(root.id)
            if key not in link.pending:
                await log.note(f"ignored a reply to no pending request (id {_clip(repr(root.id), 60)})")
                return
            link.pending.discard(key)
        await to_session.send(SessionMessage(message))

    async def oversized(head: bytes, size: int) -> None:
        await malformed(head, None, f"a message of {size} bytes, more than the {MAX_MESSAGE_BYTES // 2**20} MB allowed")

    async def read_stdout() -> None:
        assert process.stdout is not None
        buffer = bytearray()
        skipping = 0  # bytes of an overlong line skipped so far (0: not skipping)
        head = b""
        try:
            async with to_session:
                while True:
                    try:
                        chunk = await process.stdout.receive(READ_CHUNK)
                    except (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
                        break
                    start = 0
                    while start <= len(chunk):
                        end = chunk.find(b"\n", start)
                        piece = chunk[start:] if end == -1 else chunk[start:end]
                        if skipping:
                            skipping += len(piece)
                        else:
                            buffer += piece
                            if len(buffer) > MAX_MESSAGE_BYTES:
                                head, skipping = bytes(buffer[:1000]), len(buffer)
                                buffer.clear()
                        if end == -1:
                            break
                        if skipping:
                            await oversized(head, skipping)
                            skipping = 0
                        else:
                            line = bytes(buffer)
                            buffer.clear()
                            await handle(line)
                        start = end + 1
        except (anyio.ClosedResourceError, anyio.BrokenResourceError):
            pass
        finally:
            # (before the session's receive loop ends: to_session is closed by now) Its requests
            # from now on fail at once: nothing reads them.
            link.closed = True
            link.ended.set()
            await from_session.aclose()

    async def write_stdin() -> None:
        assert process.stdin is not None
        try:
            async with from_session:
                async for message in from_session:
                    root = message.message.root
                    if isinstance(root, JSONRPCRequest):
                        link.pending.add(root.id)
                    data = message.message.model_dump_json(by_alias=True, exclude_none=True)
                    await process.stdin.send(data.encode("utf-8", "replace") + b"\n")
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
            pass

    async def drain_stderr() -> None:
        assert process.stderr is not None
        with contextlib.suppress(anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
            while True:
                await log.write(await process.stderr.receive(READ_CHUNK))

    cancelled = False
    try:
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(read_stdout)
            tasks.start_soon(write_stdin)
            tasks.start_soon(drain_stderr)
            try:
                yield link
            except BaseException as exc:
                cancelled = isinstance(exc, anyio.get_cancelled_exc_class())
                raise
            finally:
                with anyio.CancelScope(shield=True):
                    await _end(process, at_once=cancelled)
                tasks.cancel_scope.cancel()
    finally:
        with anyio.CancelScope(shield=True):
            await session_write.aclose()
            await session_read.aclose()
            await log.close()


async def _end(process: anyio.abc.Process, *, at_once: bool) -> None:
    """End the server: stdin closed, :data:`TERMINATE_S` to exit, then SIGTERM and SIGKILL to its
    process group (``at_once``: SIGKILL now). Whatever it started in its group ends too."""
    if process.stdin is not None:
        with contextlib.suppress(Exception):
            await process.stdin.aclose()
    steps = [signal.SIGKILL] if at_once else [None, signal.SIGTERM, signal.SIGKILL]
    for sig in steps:
        if sig is not None:
            with contextlib.suppress(ProcessLookupError, PermissionError, OSError):
                os.killpg(process.pid, sig)
        with anyio.move_on_after(TERMINATE_S):
            await process.wait()
            break
    with contextlib.suppress(ProcessLookupError, PermissionError, OSError):
        os.killpg(process.pid, signal.SIGKILL)  # (what it left running in its group)
