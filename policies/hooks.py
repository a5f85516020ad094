"""LangChain ``AgentMiddleware`` run inside the loop's own nodes, with ``create_agent``'s semantics.

:class:`Hooks` takes a list of middleware (instances, or what LangChain's decorators make:
``@before_model``, ``@wrap_model_call``...) and composes it once, when the graph is built:

* ``before_agent`` and ``before_model`` hooks run in list order, ``after_model`` and
  ``after_agent`` in reverse order (the first middleware is the outermost, as in
  ``create_agent``); each sees the state with the updates before it applied
  (:meth:`Hooks.run_state_hooks`).
* ``wrap_model_call`` and ``wrap_tool_call`` compose with the first as the outermost layer
  (:meth:`Hooks.call_model`, :meth:`Hooks.call_tool`): a layer may change the request, call
  the next layer any number of times (retry), or answer without calling it.
* ``jump_to`` in a hook's update is honoured where the hook declared it (``can_jump_to`` of
  ``hook_config`` or the decorators), as ``create_agent`` honours only declared jumps.
* A sync-only hook runs in a worker thread, so it never blocks the event loop; a sync
  ``wrap_*`` layer gets a sync ``handler`` that runs the inner layers on the event loop.
* ``tools`` of the middleware are offered to the model; ``state_schema`` keys join the
  graph's state (:func:`state_fields`).

Where each hook runs is the graph's decision (``graphs/agent.py``): in the agent loop
``before_agent`` runs in ``resolver``, ``before_model``/``wrap_model_call``/``after_model``
in ``agent``, ``wrap_tool_call`` in ``tools``, ``after_agent`` in the node that ends the run.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextvars
import functools
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Annotated, Any, get_type_hints

from langchain.agents.middleware import AgentMiddleware, ModelRequest, ModelResponse
from langchain.agents.middleware.types import ExtendedModelResponse
from langchain_core.messages import AIMessage, ToolMessage
from langchain_core.tools import BaseTool
from langgraph.prebuilt.tool_node import ToolCallRequest
from langgraph.types import Command

from ..state import joined_update

__all__ = [
    "JUMPS",
    "Hooks",
    "MiddlewareError",
    "ModelCall",
    "StateHook",
    "check_middleware",
    "state_fields",
    "with_update",
]

#: Where a hook may send the run (``create_agent``'s ``JumpTo``).
JUMPS = ("tools", "model", "end")

ModelHandler = Callable[[ModelRequest], Awaitable[ModelResponse]]
ToolHandler = Callable[[ToolCallRequest], Awaitable["ToolMessage | Command"]]


class MiddlewareError(TypeError):
    """A middleware list that cannot run (not middleware, two with one name); one line."""


def _overrides(mw: AgentMiddleware, name: str) -> Callable[..., Any] | None:
    """``mw``'s own implementation of hook ``name`` (bound), or None when it keeps the base one."""
    if getattr(type(mw), name, None) is getattr(AgentMiddleware, name, None):
        return None
    return getattr(mw, name)


def check_middleware(items: Iterable[Any], *, what: str = "middleware") -> list[AgentMiddleware]:
    """``items`` as a list of middleware, or a :class:`MiddlewareError` naming the first that
    is not an ``AgentMiddleware`` or repeats another's ``name`` (``create_agent`` refuses both)."""
    out: list[AgentMiddleware] = []
    names: set[str] = set()
    for i, item in enumerate(items):
        if isinstance(item, type) and issubclass(item, AgentMiddleware):
            raise MiddlewareError(f"{what}[{i}] is the class {item.__name__}, not an instance: call it")
        if not isinstance(item, AgentMiddleware):
            raise MiddlewareError(
                f"{what}[{i}] is {type(item).__name__}, not a langchain AgentMiddleware "
                "(an instance, or a function decorated with @before_model, @wrap_tool_call...)"
            )
        if item.name in names:
            raise MiddlewareError(f"{what}: two middleware named {item.name!r}; give each a different name")
        names.add(item.name)
        out.append(item)
    return out


@dataclass(frozen=True)
class StateHook:
    """One ``before_*``/``after_*`` hook of one middleware."""

    name: str  # "<middleware name>.<hook>"
    sync: Callable[[Any, Any], Any] | None
    async_: Callable[[Any, Any], Awaitable[Any]] | None
    can_jump_to: tuple[str, ...]

    async def __call__(self, state: Any, runtime: Any) -> Any:
        if self.async_ is not None:
            return await self.async_(state, runtime)
        assert self.sync is not None
        return await asyncio.to_thread(self.sync, state, runtime)


def _state_hook(mw: AgentMiddleware, hook: str) -> StateHook | None:
    sync, async_ = _overrides(mw, hook), _overrides(mw, "a" + hook)
    if sync is None and async_ is None:
        return None
    jumps: list[str] = []
    for method in (sync, async_):
        jumps = jumps or list(getattr(method, "__can_jump_to__", None) or [])
    return StateHook(f"{mw.name}.{hook}", sync, async_, tuple(j for j in jumps if j in JUMPS))


@dataclass
class HookResult:
    """What a sequence of state hooks did: the state they leave (``state``), their updates in
    order (``updates``, to write), and the jump one of them asked for (None: none)."""

    state: dict[str, Any]
    updates: list[dict[str, Any]]
    jump: str | None = None


@dataclass
class ModelCall:
    """The outcome of a composed model call: the response and the commands layers added."""

    response: ModelResponse
    commands: list[Command]

    @property
    def message(self) -> AIMessage:
        """The response's AI message (the last one it holds)."""
        for m in reversed(self.response.result):
            if isinstance(m, AIMessage):
                return m
        raise MiddlewareError("a wrap_model_call hook returned a response without an AIMessage")


def _as_response(result: Any) -> tuple[ModelResponse, list[Command]]:
    if isinstance(result, ModelCall):
        return result.response, list(result.commands)
    if isinstance(result, ExtendedModelResponse):
        return result.model_response, [result.command] if result.command is not None else []
    if isinstance(result, AIMessage):
        return ModelResponse(result=[result]), []
    if isinstance(result, ModelResponse):
        return result, []
    raise MiddlewareError(f"a wrap_model_call hook returned {type(result).__name__}, not a ModelResponse")


Reducer = Callable[[Any, Any], Any]


def state_fields(middleware: Sequence[AgentMiddleware], base: type) -> dict[str, Any]:
    """The state keys the middleware's ``state_schema`` add to ``base`` (a TypedDict): name ->
    annotation (with its ``Annotated`` reducer or channel), base keys left as they are."""
    own = get_type_hints(base, include_extras=True)
    extra: dict[str, Any] = {}
    for mw in middleware:
        schema = getattr(mw, "state_schema", None)
        if schema is None:
            continue
        for key, hint in get_type_hints(schema, include_extras=True).items():
            if key not in own and key not in extra:
                extra[key] = hint
    return extra


def middleware_state(base: type, middleware: Sequence[AgentMiddleware]) -> type:
    """``base`` (a state TypedDict) with the middleware's ``state_schema`` keys and ``jump_to``
    (a hook's jump, read by the routes after its node; an ephemeral channel: cleared at the next step)."""
    from langgraph.channels.ephemeral_value import EphemeralValue
    from typing_extensions import TypedDict

    fields = {**get_type_hints(base, include_extras=True), **state_fields(middleware, base)}
    fields["jump_to"] = Annotated[str | None, EphemeralValue]
    return TypedDict(base.__name__, fields, total=False)  # type: ignore[operator]


def with_update(output: Any, update: dict[str, Any]) -> Any:
    """A node's ``output`` plus ``update``: one update merged, or one more ``Command`` after a list
    of them (what :meth:`Hooks.node_output` returns for the writes of a node with middleware)."""
    if isinstance(output, list):
        return [*output, Command(update=update)]
    return joined_update(output, update)


def reducers_of(schema: type) -> dict[str, Reducer]:
    """Key -> reducer of a state schema's ``Annotated[..., reducer]`` keys (a two-argument callable,
    as LangGraph reads them); the other keys are overwritten by an update."""
    import inspect

    out: dict[str, Reducer] = {}
    for key, hint in get_type_hints(schema, include_extras=True).items():
        for meta in getattr(hint, "__metadata__", ()):
            if callable(meta) and not isinstance(meta, type):
                try:
                    params = inspect.signature(meta).parameters
                except (TypeError, ValueError):
                    continue
                if len(params) == 2:
                    out[key] = meta
    return out


class Hooks:
    """The hooks of one middleware list, composed once. Empty (``not hooks``) for no middleware:
    the loop's nodes then skip every step below."""

    def __init__(self, middleware: Sequence[AgentMiddleware] = (), reducers: Mapping[str, Reducer] | None = None):
        self.middleware = check_middleware(middleware)
        self.reducers: dict[str, Reducer] = dict(reducers or {})
        self.before_agent = self._hooks("before_agent")
        self.before_model = self._hooks("before_model")
        self.after_model = self._hooks("after_model")[::-1]
        self.after_agent = self._hooks("after_agent")[::-1]
        self.model_layers = [
            layer for mw in self.middleware if (layer := _layer(mw, "wrap_model_call")) is not None
        ]
        self.tool_layers = [layer for mw in self.middleware if (layer := _layer(mw, "wrap_tool_call")) is not None]
        tools: list[BaseTool] = []
        for mw in self.middleware:
            tools.extend(t for t in getattr(mw, "tools", None) or () if isinstance(t, BaseTool))
        self.tools = tools

    def __bool__(self) -> bool:
        return bool(self.middleware)

    def _hooks(self, hook: str) -> list[StateHook]:
        return [h for mw in self.middleware if (h := _state_hook(mw, hook)) is not None]

    # ------------------------------------------------------------------ state hooks
    def apply(self, state: Mapping[str, Any], update: Mapping[str, Any]) -> dict[str, Any]:
        """``state`` after ``update``, each key through its reducer (overwritten when it has none)."""
        after = dict(state)
        for key, value in update.items():
            reducer = self.reducers.get(key)
            after[key] = reducer(after.get(key), value) if reducer is not None and key in after else value
        return after

    async def run_state_hooks(self, hooks: Sequence[StateHook], state: Mapping[str, Any], runtime: Any) -> HookResult:
        """Run ``hooks`` in order on ``state``; stop at the first that jumps (a declared jump)."""
        result = HookResult(dict(state), [])
        for hook in hooks:
            update = await hook(result.state, runtime)
            if isinstance(update, Command):
                if update.goto or update.graph or update.resume is not None:
                    raise MiddlewareError(f"{hook.name}: only Command(update=...) is supported; use jump_to")
                update = update.update
            if not update:
                continue
            if not isinstance(update, Mapping):
                raise MiddlewareError(f"{hook.name} returned {type(update).__name__}, not a dict of state updates")
            update = dict(update)
            jump = update.pop("jump_to", None)
            if update:
                result.updates.append(update)
                result.state = self.apply(result.state, update)
            if jump is not None and jump in hook.can_jump_to:
                result.jump = str(jump)
                break
        return result

    def node_output(self, updates: list[dict[str, Any]], jump: str | None = None) -> Any:
        """What a node returns for ``updates`` written in order by its hooks and its own work, and
        the ``jump`` a hook asked for: one update when there is one, else a ``Command`` each, a
        key without a reducer kept only where it was written last (LangGraph takes one value of
        such a key per step; the keys with reducers - ``messages`` - get every write, in order)."""
        if jump is not None:
            updates = [*updates, {"jump_to": jump}]
        updates = [u for u in updates if u]
        if len(updates) <= 1:
            return updates[0] if updates else {}
        seen: set[str] = set()
        kept: list[dict[str, Any]] = []
        for update in reversed(updates):
            kept.append({k: v for k, v in update.items() if k in self.reducers or k not in seen})
            seen.update(k for k in update if k not in self.reducers)
        return [Command(update=u) for u in reversed(kept) if u]

    # ------------------------------------------------------------------ model calls
    async def call_model(self, request: ModelRequest, execute: ModelHandler) -> ModelCall:
        """``execute(request)`` through every ``wrap_model_call`` layer (the first outermost).
        Commands a layer returns (``ExtendedModelResponse``) are kept inner layers' first; those
        of an inner call a layer retried are dropped, as ``create_agent`` drops them."""
        layers = self.model_layers

        async def run(i: int, req: ModelRequest) -> tuple[ModelResponse, list[Command]]:
            if i == len(layers):
                return await execute(req), []
            inner: list[Command] = []

            async def handler(r: ModelRequest) -> ModelResponse:
                inner.clear()
                response, commands = await run(i + 1, r)
                inner.extend(commands)
                return response

            response, own = _as_response(await layers[i](req, handler))
            return response, [*inner, *own]

        return ModelCall(*await run(0, request))

    # ------------------------------------------------------------------ tool calls
    async def call_tool(self, request: ToolCallRequest, execute: ToolHandler) -> ToolMessage | Command:
        """``execute(request)`` through every ``wrap_tool_call`` layer (the first outermost)."""
        layers = self.tool_layers

        async def at(i: int, req: ToolCallRequest) -> ToolMessage | Command:
            if i == len(layers):
                return await execute(req)
            result = await layers[i](req, functools.partial(at, i + 1))
            if not isinstance(result, (ToolMessage, Command)):
                raise MiddlewareError(f"a wrap_tool_call hook returned {type(result).__name__}, not a ToolMessage")
            return result

        return await at(0, request)


Layer = Callable[[Any, Callable[[Any], Awaitable[Any]]], Awaitable[Any]]


def _layer(mw: AgentMiddleware, hook: str) -> Layer | None:
    """``mw``'s ``a<hook>`` as an async layer; a sync-only ``<hook>`` runs in a worker thread
    whose ``handler`` hands the inner layers back to the event loop."""
    async_ = _overrides(mw, "a" + hook)
    if async_ is not None:
        return async_
    sync = _overrides(mw, hook)
    if sync is None:
        return None

    async def layer(request: Any, handler: Callable[[Any], Awaitable[Any]]) -> Any:
        loop = asyncio.get_running_loop()
        context = contextvars.copy_context()  # (the node's: the run's config, meters, stream writer)

        def sync_handler(req: Any) -> Any:
            done: concurrent.futures.Future[Any] = concurrent.futures.Future()

            def settle(task: asyncio.Task[Any]) -> None:
                if task.cancelled():
                    done.cancel()
                elif (exc := task.exception()) is not None:
                    done.set_exception(exc)
                else:
                    done.set_result(task.result())

            def start() -> None:
                task = loop.create_task(_awaited(handler(req)), context=context.copy())
                task.add_done_callback(settle)

            loop.call_soon_threadsafe(start)
            return done.result()

        return await asyncio.to_thread(sync, request, sync_handler)

    layer.__name__ = f"{mw.name}.{hook}"
    return layer


async def _awaited(awaitable: Awaitable[Any]) -> Any:
    return await awaitable
