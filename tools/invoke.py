"""Run one tool call safely: argument validation, runtime injection, timeout.

Shared by the agent loop's ``tools`` node and the planner's executor. A tool
failure never raises: it becomes a ``ToolOutcome`` with ``ok=False`` and a
message the model can read and react to.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import json
import time
import warnings
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from langchain.tools import ToolRuntime
from langchain_core.messages import ToolMessage
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import BaseTool
from langgraph.errors import GraphBubbleUp
from langgraph.prebuilt.tool_node import ToolCallRequest
from langgraph.types import Command
from pydantic import ValidationError

from ..models.tokens import measure_message
from ..policies.hooks import Hooks
from .executor import ainvoke_tool
from .retry import is_retryable

# LangChain validates injected ``ToolRuntime`` arguments with a schema whose
# ``context`` is typed ``None`` for a bare ``ToolRuntime`` annotation; dumping it
# warns although the real runtime object is what the tool receives.
warnings.filterwarnings(
    "ignore",
    message=r"Pydantic serializer warnings:\s+PydanticSerializationUnexpectedValue\(Expected "
        r"`none`.*field_name='(context|state|store)'",
    category=UserWarning,
)


@dataclass
class ToolOutcome:
    name: str
    call_id: str
    ok: bool
    content: str  # what the model sees (error text when not ok)
    raw: Any = None  # the tool's return value (JSON-able where possible)
    error: str | None = None
    duration_s: float = 0.0
    artifact: Any = None
    extra: dict[str, Any] = field(default_factory=dict)
    # State update of a tool that returned a LangGraph ``Command(update=...)`` (its
    # ToolMessage, if any, became ``content``); the tools node merges it.
    update: dict[str, Any] | None = None
    # Whether another attempt may succeed (a timeout, a connection error, an exception
    # marked retryable: tools/retry.py); the planner retries only these.
    retryable: bool = False
    # The result message, built where the tool ran (run_tool: a sync tool's worker thread).
    message: ToolMessage | None = field(default=None, repr=False, compare=False)

    @classmethod
    def of_message(cls, message: ToolMessage, name: str) -> ToolOutcome:
        """The outcome a ``ToolMessage`` says (what a middleware's ``wrap_tool_call`` returned)."""
        ok = message.status != "error"
        content = stringify(message)
        outcome = cls(message.name or name, message.tool_call_id, ok, content, error=None if ok else "tool_error")
        outcome.message = message
        return outcome

    def update_command(self) -> Command:
        """A state-updating outcome as the ``Command`` its tool returned: the update and its result message."""
        return Command(update={**(self.update or {}), "messages": [self.to_message()]})

    def to_message(self) -> ToolMessage:
        built = self.message
        if built is not None and built.content is self.content and built.status == ("success" if self.ok else "error"):
            return built
        return ToolMessage(
            content=self.content,
            tool_call_id=self.call_id,
            name=self.name,
            status="success" if self.ok else "error",
            artifact=self.artifact,
        )


class _Done:
    """A tool's successful outcome, built where it ran (:func:`run_tool`'s ``then``)."""

    __slots__ = ("outcome",)

    def __init__(self, outcome: ToolOutcome) -> None:
        self.outcome = outcome


def _finisher(tool: BaseTool, call_id: str) -> Any:
    """What turns a tool's return value into its outcome and result message, applied where the
    tool ran: a sync tool's worker thread builds them before the event loop wakes up for them."""

    def finish(result: Any) -> Any:
        if isinstance(result, Command):
            return result
        artifact = None
        if isinstance(result, tuple) and getattr(tool, "response_format", None) == "content_and_artifact":
            result, artifact = result
        outcome = ToolOutcome(tool.name, call_id, True, stringify(result), raw=result, artifact=artifact)
        outcome.message = outcome.to_message()
        measure_message(outcome.message)  # (for the next request's size, measured after the tools)
        return _Done(outcome)

    return finish


def outcome_from_command(name: str, call_id: str, command: Command, duration_s: float) -> ToolOutcome:
    """A tool's ``Command(update=...)``: its ToolMessage is the result, the rest a state update."""
    update = dict(command.update or {}) if isinstance(command.update, dict) else {}
    messages = update.pop("messages", None) or []
    own = [m for m in messages if isinstance(m, ToolMessage) and m.tool_call_id in (call_id, "", None)]
    content = stringify(own[0].content) if own else "Done."
    ok = not own or own[0].status != "error"
    return ToolOutcome(name, call_id, ok, content, raw=command, duration_s=duration_s, update=update or None)


def tool_timeout(meta: Any, ctx: Any) -> float | None:
    """A tool's timeout in a run: the lower of its own (``ToolMeta.timeout_s``) and the
    run's ``tool_timeout_s``; None when neither sets one."""
    own, run = getattr(meta, "timeout_s", None), getattr(ctx, "tool_timeout_s", None)
    return min(own, run) if own and run else (own or run or None)


def runtime_param(tool: BaseTool) -> str | None:
    """Name of the parameter where the tool wants a ``ToolRuntime`` injected, if any."""
    cached = getattr(tool, "__smart_agent_runtime_param__", "unset")
    if cached != "unset":
        return cached
    name = None
    func = getattr(tool, "coroutine", None) or getattr(tool, "func", None)
    if func is not None:
        try:
            hints: Mapping[str, inspect.Parameter] = inspect.signature(func).parameters
        except (TypeError, ValueError):
            hints = {}
        for pname, param in hints.items():
            ann = param.annotation
            origin = getattr(ann, "__origin__", None)
            if ann is ToolRuntime or origin is ToolRuntime or (
                inspect.isclass(ann) and issubclass(ann, ToolRuntime)
            ) or (isinstance(ann, str) and ann.split("[")[0].endswith("ToolRuntime")):
                name = pname
                break
    with contextlib.suppress(Exception):
        object.__setattr__(tool, "__smart_agent_runtime_param__", name)
    return name


def stringify(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, ToolMessage):
        return value.text if hasattr(value, "text") else str(value.content)
    try:
        return json.dumps(value, ensure_ascii=False, default=str)
    except Exception:
        return str(value)


def _format_validation_error(tool: BaseTool, exc: ValidationError) -> str:
    problems = []
    for err in exc.errors():
        loc = ".".join(str(p) for p in err.get("loc", ()) if p != "runtime") or "(arguments)"
        problems.append(f"{loc}: {err.get('msg')}")
    return f"Invalid arguments for tool {tool.name!r}: " + "; ".join(problems)


async def run_tool(
    tool: BaseTool,
    args: dict[str, Any],
    *,
    call_id: str,
    context: Any = None,
    state: Any = None,
    store: Any = None,
    config: RunnableConfig | None = None,
    stream_writer: Any = None,
    timeout_s: float | None = None,
) -> ToolOutcome:
    """Execute ``tool`` with ``args``; never raises for tool-side failures."""
    start = time.perf_counter()
    if not isinstance(args, dict):
        return ToolOutcome(
            tool.name,
            call_id,
            False,
            f"Invalid arguments for tool {tool.name!r}: expected a JSON object, got {type(args).__name__}",
            error="invalid_args",
        )
    call_args = dict(args)
    rp = runtime_param(tool)
    if rp:
        call_args.pop(rp, None)  # the model may not supply injected values
        call_args[rp] = ToolRuntime(
            state=state if state is not None else {},
            context=context,
            config=config or {},
            stream_writer=stream_writer or (lambda _x: None),
            tool_call_id=call_id,
            store=store,
        )
    try:
        # (a sync tool runs in a daemon thread, abandoned at the timeout; an async one is
        # cancelled in this task: no task of its own, which wait_for would start)
        result = await ainvoke_tool(tool, call_args, config, timeout_s, then=_finisher(tool, call_id))
    except TimeoutError:
        return ToolOutcome(
            tool.name,
            call_id,
            False,
            f"Tool {tool.name!r} timed out after {timeout_s:g} s",
            error="timeout",
            duration_s=time.perf_counter() - start,
            retryable=True,
        )
    except ValidationError as exc:
        return ToolOutcome(
            tool.name,
            call_id,
            False,
            _format_validation_error(tool, exc),
            error="invalid_args",
            duration_s=time.perf_counter() - start,
        )
    except (asyncio.CancelledError, GraphBubbleUp):
        raise  # (an interrupt, e.g. ask_user's, belongs to LangGraph)
    except Exception as exc:  # any tool failure becomes an error message
        text = str(exc).strip() or type(exc).__name__
        return ToolOutcome(
            tool.name,
            call_id,
            False,
            f"Tool {tool.name!r} failed: {text}",
            error=type(exc).__name__,
            duration_s=time.perf_counter() - start,
            retryable=is_retryable(exc),
        )
    if isinstance(result, _Done):
        result.outcome.duration_s = time.perf_counter() - start
        return result.outcome
    return outcome_from_command(tool.name, call_id, result, time.perf_counter() - start)


async def outcome_through(
    hooks: Hooks,
    request: ToolCallRequest,
    run: Callable[[Mapping[str, Any]], Awaitable[ToolOutcome]],
    *,
    again: Callable[[], bool] | None = None,
    budget_note: str = "",
) -> ToolOutcome:
    """``run(tool_call)`` - one execution of a call - through the ``wrap_tool_call`` layers of a
    user's middleware (``policies/hooks.py``), which may change the call, run it again, or answer
    it themselves. The outcome is the execution's own when a layer passes its message on, else
    what the layers returned. ``again``: takes a second (third...) execution from the run's tool
    budget; when it grants none the handler answers "not run again" (``budget_note`` says why)."""
    outcomes: dict[int, tuple[Any, ToolOutcome]] = {}  # (the message kept alive: its id stays its own)
    executions = [0]
    call = request.tool_call
    name, call_id = call.get("name") or "", call.get("id") or ""

    async def handler(req: ToolCallRequest) -> ToolMessage | Command:
        executions[0] += 1
        if executions[0] > 1 and again is not None and not again():
            return ToolMessage(f"Not run again: tool budget exhausted{budget_note}.", tool_call_id=call_id, name=name,
                               status="error")  # fmt: skip
        outcome = await run(req.tool_call)
        message: ToolMessage | Command = outcome.update_command() if outcome.update else outcome.to_message()
        outcomes[id(message)] = (message, outcome)
        return message

    result = await hooks.call_tool(request, handler)
    kept = outcomes.get(id(result))
    if kept is not None and kept[0] is result:
        return kept[1]
    if isinstance(result, Command):
        return outcome_from_command(name, call_id, result, 0.0)
    return ToolOutcome.of_message(result, name)
