"""MCP servers' tools for one run, through langchain-mcp-adapters.

    async with mcp_tools("mcp.json") as mcp:          # or a list of McpServer
        graph = build_agent_graph(registry=mcp.registry)   # or tools=mcp.tools
        await graph.ainvoke(...)

``mcp_tools`` opens every server's session once (all at once, each within its
``start_timeout_s``), lists its tools and registers them, named ``<server>__<tool>``, in a
copy of the run's registry with their ``ToolMeta`` (``source="mcp:<server>"``, tag ``mcp``,
side effects unless the configuration says otherwise). At the end - also on an error or a
cancellation - every session is closed and every stdio server process ends.

A server that fails to start (a missing command, a refused connection, too slow, a malformed
handshake or tool list, more than ``MAX_TOOLS`` tools) is left out: one ``error`` event
(``source`` "mcp", ``server``, ``error``: one line naming it, and a stdio server's log) goes
to ``on_event`` and the run goes on with the other tools. ``start_timeout_s`` bounds the whole
start: a session still starting is cancelled at once (its process group killed). A call on a
session whose server died fails promptly ("is gone"), bounded by the tool's timeout at worst;
a JSON-RPC error, a malformed reply or a malformed result fails it with one line saying which
(:class:`McpProtocolError`); the tools node turns the failure into an error tool message like
any tool failure.

Stdio servers speak through ``mcp_stdio.stdio_transport`` (not ``mcp``'s ``stdio_client``):
bounded lines, malformed lines failing the request they answer at once, no tracebacks, the
server's stderr in ``<data folder>/logs/mcp-<server>.log``. HTTP servers go through
``langchain-mcp-adapters``' sessions.

Each server's session lives in a task of its own (MCP's clients are anyio task groups,
which must be entered and left by the same task); tool calls from any task use it.

``run_mcp_tools`` opens them for one graph run and makes their tools the run's *run tools*
(``run_tools.py``), which the run's registries hold: what a graph built with MCP servers
does around each async run (``graphs/run_scope.py``).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any, TypeVar

from langchain_core.tools import BaseTool, StructuredTool

from ..runs.events import make_event
from ..runs.run_tools import RunTools, current_run_tools
from .mcp_config import McpServer, load_mcp_config
from .mcp_stdio import MALFORMED, StdioLink, stdio_transport
from .registry import META_KEY, ToolMeta, ToolRegistry

__all__ = ["MCP_TAG", "McpProtocolError", "McpServerGone", "McpTools", "mcp_tools", "run_mcp_tools", "run_tools_of"]

log = logging.getLogger(__name__)

MCP_TAG = "mcp"
CLOSE_TIMEOUT_S = 10.0  # a session that does not close by then is cancelled
PROBE_S = 2.0  # while a call on an HTTP server waits, the server is pinged this often
TOOL_NAME_MAX = 64  # what model providers accept in a tool name
MAX_TOOLS = 1000  # the most tools one server may list (a longer list: the server does not start)
MAX_TOOL_PAGES = 100  # the most pages of its tool list read
REQUEST_TIMEOUT = 408  # the code of mcp's own "Timed out while waiting for response" error
T = TypeVar("T")


class McpServerGone(RuntimeError):
    """A call on a session whose server has stopped: not worth retrying within the run."""

    retryable = False


class McpProtocolError(RuntimeError):
    """A server answered a call with a JSON-RPC error, a malformed reply or a malformed result
    (one line naming the server); not retried."""

    retryable = False


@dataclass
class McpTools:
    """The tools a run's MCP sessions provide, and the run's registry with them added."""

    registry: ToolRegistry
    tools: list[BaseTool] = field(default_factory=list)
    servers: dict[str, list[str]] = field(default_factory=dict)  # started server -> its tool names
    errors: list[str] = field(default_factory=list)  # one line per server or tool left out

    def __iter__(self) -> Iterator[BaseTool]:
        return iter(self.tools)


@contextlib.asynccontextmanager
async def mcp_tools(
    config: str | Path | Sequence[McpServer],
    *,
    registry: ToolRegistry | None = None,
    on_event: Callable[[dict], None] | None = None,
) -> AsyncIterator[McpTools]:
    """Open the configured servers for the length of the ``async with`` (see the module doc).
    ``config``: a JSON file or parsed servers; ``registry``: the run's tools (default: the
    built-in tools and plugins), copied, never changed."""
    servers = load_mcp_config(config) if isinstance(config, (str, Path)) else list(config)
    if registry is None:
        from .builtins import default_registry

        registry = default_registry()
    result = McpTools(registry.copy())

    def fail(server: str, text: str) -> None:
        result.errors.append(text)
        if on_event is None:
            log.warning("smart-agent: %s", text)
        else:
            on_event(make_event("error", source="mcp", server=server, error=text))

    sessions = [_Session(s) for s in servers]
    try:
        opened = await asyncio.gather(*(s.start() for s in sessions))
        for session, (tools, problem) in zip(sessions, opened, strict=True):
            if problem is not None:
                fail(session.server.name, problem)
                continue
            names = result.servers.setdefault(session.server.name, [])
            for tool, meta in tools:
                if tool.name in result.registry:
                    fail(session.server.name, f"MCP server {session.server.name!r}: tool {tool.name!r} left out: "
                         "a tool of that name is already registered (set tool_prefix)")
                    continue
                result.registry.register(tool, meta)
                result.tools.append(tool)
                names.append(tool.name)
            for problem in session.skipped:
                fail(session.server.name, problem)
        yield result
    finally:
        await asyncio.gather(*(s.close() for s in sessions), return_exceptions=True)


@contextlib.asynccontextmanager
async def run_mcp_tools(
    servers: Sequence[McpServer], *, on_event: Callable[[dict], None] | None = None
) -> AsyncIterator[RunTools | None]:
    """The servers' sessions open for the ``async with``: their tools as run tools, which the
    caller makes current (``using_run_tools``) where the run goes. A server that does not start:
    an ``error`` event to ``on_event``, or, without one, sent on the run's stream by the first
    node that reads the run tools. Inside a run that already has run tools (a child graph of that
    run, a CLI run that opened its servers) nothing opens: those are the run's (None: no servers)."""
    current = current_run_tools()
    if current is not None or not servers:
        yield current
        return
    tools = RunTools()

    def keep(ev: dict) -> None:
        tools.errors.append({k: v for k, v in ev.items() if k not in ("event", "ts")})

    async with mcp_tools(servers, on_event=on_event or keep) as mcp:
        tools.pairs = run_tools_of(mcp).pairs
        yield tools


def run_tools_of(mcp: McpTools) -> RunTools:
    """The run tools of open sessions: each tool with its ``ToolMeta``."""
    return RunTools(pairs=[(tool, mcp.registry.meta(tool.name)) for tool in mcp.tools])


class _Session:
    """One server's session, held open by a task of its own until ``close``."""

    def __init__(self, server: McpServer) -> None:
        self.server = server
        self.skipped: list[str] = []
        self._stop = asyncio.Event()
        self._ended = asyncio.Event()  # the session is over (closed, or its transport failed)
        self._task: asyncio.Task | None = None
        self._session: Any = None
        self._link: StdioLink | None = None  # a stdio server's transport
        self._started = False

    async def start(self) -> tuple[list[tuple[BaseTool, ToolMeta]], str | None]:
        """The server's tools (with metadata), or the one-line reason it did not start. The start
        timeout bounds all of it: the process, the handshake and the tool list."""
        ready: asyncio.Future = asyncio.get_running_loop().create_future()
        self._task = asyncio.create_task(self._hold(ready), name=f"mcp:{self.server.name}")
        name = self.server.name
        try:
            raw = await asyncio.wait_for(asyncio.shield(ready), self.server.start_timeout_s)
        except TimeoutError:
            ready.cancel()  # (nothing is set on it later, which asyncio would report)
            await self.close()
            return [], (f"MCP server {name!r} did not start within {self.server.start_timeout_s:g} s"
                        f"{self._log_hint()}; its tools are off")
        except Exception as exc:
            await self.close()
            phrase = self._phrase(_innermost(exc))
            why = f"it {phrase}" if phrase else _reason(exc)
            return [], f"MCP server {name!r} failed to start: {why}{self._log_hint()}; its tools are off"
        self._started = True
        return self._convert(raw), None

    def _log_hint(self) -> str:
        return f" (its log: {self._link.log})" if self._link is not None else ""

    async def _hold(self, ready: asyncio.Future) -> None:
        from mcp import ClientSession

        connection = dict(self.server.connection)
        kwargs: dict[str, Any] = {}
        if self.server.meta.timeout_s:  # a request with no answer fails after the tool's timeout
            kwargs["read_timeout_seconds"] = timedelta(seconds=self.server.meta.timeout_s)
        try:
            async with contextlib.AsyncExitStack() as stack:
                if connection["transport"] == "stdio":
                    link = await stack.enter_async_context(stdio_transport(
                        self.server.name, connection["command"], connection.get("args") or [],
                        connection.get("env"), connection.get("cwd"),
                    ))  # fmt: skip
                    self._link = link
                    session = await stack.enter_async_context(ClientSession(link.read, link.write, **kwargs))
                else:
                    from langchain_mcp_adapters.sessions import create_session

                    if kwargs:
                        connection["session_kwargs"] = kwargs
                    session = await stack.enter_async_context(create_session(connection))  # type: ignore[arg-type]
                await session.initialize()
                tools = await self._list_tools(session)
                self._session = session
                if not ready.done():
                    ready.set_result(tools)
                await self._until_over()
        except BaseException as exc:
            if not ready.done():
                ready.set_exception(exc if isinstance(exc, Exception) else RuntimeError("cancelled"))
            elif not isinstance(exc, asyncio.CancelledError):
                log.info("smart-agent: MCP server %r session ended: %s", self.server.name, _reason(exc))
            if isinstance(exc, asyncio.CancelledError):
                raise
        finally:
            self._ended.set()

    async def _until_over(self) -> None:
        """Until ``close`` asks, or a stdio server's output ends (its process exited)."""
        waits: set[asyncio.Future[Any]] = {asyncio.ensure_future(self._stop.wait())}
        if self._link is not None:
            waits.add(asyncio.ensure_future(self._link.ended.wait()))
        try:
            await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for wait in waits:
                wait.cancel()

    async def _list_tools(self, session: Any) -> list[BaseTool]:
        """The server's tools, page by page, at most :data:`MAX_TOOLS` (else McpProtocolError)."""
        from langchain_mcp_adapters.tools import convert_mcp_tool_to_langchain_tool
        from mcp.types import PaginatedRequestParams

        found: list[Any] = []
        cursor = None
        for _ in range(MAX_TOOL_PAGES):
            page = await session.list_tools(params=PaginatedRequestParams(cursor=cursor) if cursor else None)
            found.extend(page.tools)
            if len(found) > MAX_TOOLS:
                raise McpProtocolError(f"lists more than {MAX_TOOLS} tools")
            cursor = page.nextCursor
            if not cursor:
                break
        else:
            raise McpProtocolError(f"lists its tools in more than {MAX_TOOL_PAGES} pages")
        return [
            convert_mcp_tool_to_langchain_tool(session, tool, server_name=self.server.name, handle_tool_errors=False)
            for tool in found
        ]

    def problem(self, exc: BaseException) -> Exception | None:
        """What a failed request means, as the exception a tool call raises (one line naming the
        server): McpProtocolError for a JSON-RPC error (its code and message), a malformed reply
        or a malformed result; TimeoutError for no answer in time; None for anything else."""
        if _timed_out(exc):
            return TimeoutError(f"MCP server {self.server.name!r} did not answer in time")
        phrase = self._phrase(exc)
        return None if phrase is None else McpProtocolError(f"MCP server {self.server.name!r} {phrase}")

    def _phrase(self, exc: BaseException) -> str | None:
        """What the server did wrong (``sent a malformed reply: ...``), or None."""
        from mcp.shared.exceptions import McpError
        from pydantic import ValidationError

        if isinstance(exc, McpProtocolError):
            return str(exc)
        if isinstance(exc, ValidationError):  # the session read the result as the request's type
            return f"sent a malformed result: {_first_problem(exc)}"
        if not isinstance(exc, McpError) or self._connection_closed(exc) or _timed_out(exc):
            return None
        if exc.error.data is MALFORMED:
            return f"sent a {_one_line(exc.error.message)}"
        return f"answered with JSON-RPC error {exc.error.code}: {_one_line(exc.error.message) or '(no message)'}"

    def _connection_closed(self, exc: BaseException) -> bool:
        """A send on a closed transport, or the session's "Connection closed" answer to a pending
        request - not a server's own error with that code (-32000): a stdio transport knows
        whether the server's output ended; over HTTP the error must be exactly the session's."""
        import anyio
        from mcp.shared.exceptions import McpError
        from mcp.types import CONNECTION_CLOSED

        if isinstance(exc, (anyio.ClosedResourceError, anyio.BrokenResourceError, anyio.EndOfStream)):
            return True
        if not isinstance(exc, McpError) or exc.error.code != CONNECTION_CLOSED:
            return False
        if self._link is not None:
            return self._link.closed
        return exc.error.message == "Connection closed" and exc.error.data is None

    async def guarded(self, call: Awaitable[T]) -> T:
        """``call``'s result; ``McpServerGone`` as soon as the session is over (its process
        exited, its connection was refused) instead of waiting for an answer that cannot
        come. An HTTP server is pinged every ``PROBE_S`` while a call waits: a dead one then
        ends its session (a server that stops mid-call never answers the call itself)."""
        work = asyncio.ensure_future(call)
        ended = asyncio.ensure_future(self._ended.wait())
        probe = asyncio.ensure_future(self._probe()) if self.server.connection["transport"] != "stdio" else None
        try:
            await asyncio.wait({work, ended}, return_when=asyncio.FIRST_COMPLETED)
            if work.done():
                return work.result()
        except Exception as exc:
            if self._connection_closed(exc):
                raise McpServerGone(self._gone()) from exc
            problem = self.problem(exc)
            if problem is not None:
                raise problem from None
            raise
        finally:
            for task in (work, ended, probe):
                if task is not None and not task.done():
                    task.cancel()
        raise McpServerGone(self._gone())

    def _gone(self) -> str:
        return f"MCP server {self.server.name!r} is gone (its process ended or its connection closed)"

    async def _probe(self) -> None:
        while True:
            await asyncio.sleep(PROBE_S)
            if self._session is not None:
                with contextlib.suppress(Exception):
                    await asyncio.wait_for(self._session.send_ping(), PROBE_S)

    def _convert(self, raw: list[BaseTool]) -> list[tuple[BaseTool, ToolMeta]]:
        server = self.server
        by_name = {t.name: t for t in raw}
        wanted = list(server.allowed) if server.allowed is not None else list(by_name)
        out = []
        for name in wanted:
            if name not in by_name:
                self.skipped.append(f"MCP server {server.name!r} has no tool {name!r} (tools: {', '.join(by_name)})")
                continue
            full = server.tool_name(name)
            if len(full) > TOOL_NAME_MAX or not all(c.isalnum() or c in "_-" for c in full):
                self.skipped.append(f"MCP server {server.name!r}: tool {name!r} left out: {full!r} is not a valid "
                                    "tool name (letters, digits, '_', '-'; at most 64)")
                continue
            meta = server.meta_of(name)
            out.append((_renamed(by_name[name], full, self, meta), meta))
        return out

    async def close(self) -> None:
        """End the session: a started one is asked to close (cancelled after ``CLOSE_TIMEOUT_S``),
        one still starting is cancelled at once (a stdio server's process group is killed)."""
        self._stop.set()
        task = self._task
        if task is None or task.done():
            return
        done: set = set()
        if self._started:
            done, _ = await asyncio.wait({task}, timeout=CLOSE_TIMEOUT_S)
        if not done:
            task.cancel()
            with contextlib.suppress(BaseException):
                await task


def _renamed(tool: BaseTool, name: str, session: _Session, meta: ToolMeta) -> BaseTool:
    """The adapter's tool under ``name``, returning text (an MCP error result raises), its
    calls guarded by the session (a dead server fails the call at once), carrying ``meta``
    (so ``build_agent_graph(tools=...)`` keeps it)."""
    inner = tool.coroutine if isinstance(tool, StructuredTool) else None
    if inner is None or tool.args_schema is None:  # (the adapter always builds a StructuredTool with both)
        return tool

    async def call(**arguments: Any) -> str:
        content, artifact = await session.guarded(inner(**arguments))
        return _text(content, artifact)

    return StructuredTool(
        name=name,
        description=tool.description or f"MCP tool {tool.name}",
        args_schema=tool.args_schema,
        coroutine=call,
        metadata={**(tool.metadata or {}), "mcp_tool": tool.name, META_KEY: meta},
        tags=[MCP_TAG],
    )


def _text(content: Any, artifact: Any) -> str:
    """An MCP result as the text the model reads: its text blocks, else its structured content."""
    if isinstance(content, str):
        return content
    parts = []
    for block in content if isinstance(content, list) else [content]:
        if isinstance(block, dict) and block.get("type") == "text":
            parts.append(str(block.get("text", "")))
        elif isinstance(block, str):
            parts.append(block)
        elif isinstance(block, dict):
            parts.append(f"[{block.get('type', 'content')} {block.get('mime_type', '')}]".replace(" ]", "]"))
    text = "\n".join(parts)
    if not text and isinstance(artifact, dict) and artifact.get("structured_content") is not None:
        return json.dumps(artifact["structured_content"], ensure_ascii=False, default=str)
    return text


def _timed_out(exc: BaseException) -> bool:
    """mcp's own error for a request with no answer within its read timeout."""
    from mcp.shared.exceptions import McpError

    if not isinstance(exc, McpError):
        return False
    error = exc.error
    return error.code == REQUEST_TIMEOUT and error.data is None and error.message.startswith("Timed out while waiting")


def _innermost(exc: BaseException) -> BaseException:
    """``exc`` out of the exception groups anyio wraps it in."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return exc


def _one_line(text: str, n: int = 300) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= n else text[:n] + "..."


def _first_problem(exc: Any) -> str:
    """The first problem of a pydantic ValidationError, one line (``content: Input should be...``)."""
    try:
        first = exc.errors()[0]
    except Exception:
        return _one_line(str(exc))
    where = ".".join(str(p) for p in first.get("loc", ())) or "(result)"
    return _one_line(f"{where}: {first.get('msg')}")


def _reason(exc: BaseException) -> str:
    """The innermost meaningful error of ``exc`` (anyio wraps them in exception groups), one line."""
    exc = _innermost(exc)
    text = " ".join(str(exc).split()) or type(exc).__name__
    return f"{type(exc).__name__}: {text}" if type(exc).__name__ not in text else text
