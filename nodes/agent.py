"""agent: one model turn — system prompt + conversation + the tools on offer."""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, cast

from langchain.agents.middleware import ModelRequest, ModelResponse
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage
from langchain_core.tools import BaseTool
from langgraph.runtime import Runtime

from ..config.context import AgentContext
from ..history.budget import ContextBudget
from ..models.chat import (
    Fallback,
    ModelBudgetError,
    ModelReplyError,
    aload_chat_model,
    invoke_model,
    model_fallbacks,
    model_options,
    rebind_all,
)
from ..models.messages import as_ai_message, message_text, usage_of
from ..models.prompts import build_system_prompt
from ..models.tokens import count_request, resolve_counter
from ..models.usage import BUDGET_NOTICE, BUDGET_SPENT_ANSWER, Meter, metered
from ..policies.hooks import Hooks
from ..policies.tool_call_limits import limit_reply
from ..replies.submit import bind_submit
from ..runs.events import emit, preview, streaming
from ..state import AgentState, count_of, joined_update, kept, run_setting
from ..tools.ask import ASK_TAG
from ..tools.context_tools import CONTEXT_TAG, CONTEXT_TOOL_NAMES, context_tools_for
from ..tools.registry import ToolRegistry
from .routes import pending_tool_calls, tool_limit_reached


def offered_tools(ctx: AgentContext, registry: ToolRegistry, state: Mapping[str, Any]) -> list[BaseTool]:
    """The tools this turn may call: none once the run must finalize."""
    if kept(state, "finalize") or tool_limit_reached(state):
        return []
    # Context tools (get_tool_response, manage_todo_list) are offered only when they apply,
    # memory tools only while the run's memory is on, ask_user only while the run's ask_user is.
    # (Twice per turn - the route measures the request, the agent sends it: the registry keeps
    # the offer of each setting until its tools change.)
    memory, ask = bool(getattr(ctx, "memory", False)), bool(getattr(ctx, "ask_user", False))
    names = tuple(ctx.tools) if ctx.tools else None
    tools = registry.memo(("offered", names, memory, ask), lambda: _offer(registry, names, memory, ask))
    extra = context_tools_for(ctx, registry, state)
    return [*tools, *(t for t in extra if t not in tools)] if extra else [*tools]


def _offer(registry: ToolRegistry, names: tuple[str, ...] | None, memory: bool, ask_user: bool) -> list[BaseTool]:
    """The registry's tools of ``names`` (all: None) a turn may offer, before the context tools."""
    hidden = set() if memory else {"memory"}
    if not ask_user:
        hidden.add(ASK_TAG)
    return [
        t
        for t, meta in registry.entries(names)
        if not (t.name in CONTEXT_TOOL_NAMES and CONTEXT_TAG in meta.tags) and not hidden.intersection(meta.tags)
    ]


class ToolBinding:
    """``llm.bind_tools(tools)`` made once per (model object, tool objects) and reused: binding
    converts every tool to a schema and inspects its signature, and an agent node offers the
    same registry objects every turn. Keyed on the objects' ids; each entry keeps the model
    and the tools themselves, so no other object can take one of those ids while it exists.
    Nothing it depends on changes in place: a registry's tools are never edited (tokens.py
    converts them once too), and the binding holds the model itself, so a later change to
    it is seen by the call. It holds no run, thread or context: those come with each call.
    One per agent node (it lives with the graph); the oldest entries go beyond ``size``."""

    def __init__(self, size: int = 8) -> None:
        self.size = size
        self._entries: dict[tuple[int, ...], tuple[Any, tuple[Any, ...], Any]] = {}

    def __call__(self, llm: Any, tools: Sequence[BaseTool | dict[str, Any]]) -> Any:
        if not tools:
            return llm
        key = (id(llm), *map(id, tools))
        hit = self._entries.get(key)
        if hit is not None:
            return hit[2]
        bound = llm.bind_tools(tools)
        while len(self._entries) >= self.size:
            self._entries.pop(next(iter(self._entries)), None)
        self._entries[key] = (llm, tuple(tools), bound)
        return bound


@functools.lru_cache(maxsize=64)
def system_message(text: str) -> SystemMessage:
    """The system message of a prompt text, built once per text: a run sends the same prompt
    turn after turn (nobody changes a request's messages; they are LangChain's input)."""
    return SystemMessage(content=text)


def bind_tools(llm: Any, tools: Sequence[BaseTool | dict[str, Any]]) -> Any:
    """``llm`` with ``tools`` bound (none: ``llm`` itself), bound anew."""
    return llm.bind_tools(tools) if tools else llm


Binding = Callable[[Any, Sequence[BaseTool | dict[str, Any]]], Any]


def start_model_call(
    model: BaseChatModel,
    messages: list[BaseMessage],
    tools: Sequence[BaseTool | dict[str, Any]],
    *,
    spec: str | None = None,
    fallbacks: Sequence[Fallback] = (),
    binding: Binding = bind_tools,
) -> Awaitable[Any]:
    """:func:`models.invoke_model` of the model with ``tools`` bound (``fallbacks`` rebound the
    same way), not awaited: the caller awaits it (no coroutine of its own around every call)."""
    rebound = rebind_all(fallbacks, lambda llm: binding(llm, tools)) if fallbacks else ()
    return invoke_model(binding(model, tools), messages, spec=spec, fallbacks=rebound)


async def call_model(
    model: BaseChatModel, messages: list[BaseMessage], tools: Sequence[BaseTool | dict[str, Any]], **options: Any
) -> AIMessage:
    """Invoke the model (then its fallbacks, each with the same tools bound, after a provider
    error); configuration and reachability failures become ModelConfigError. ``options``: those
    of :func:`start_model_call` (``spec``, ``fallbacks``, ``binding``: a node's
    :class:`ToolBinding` reuses its bindings)."""
    return as_ai_message(await start_model_call(model, messages, tools, **options))


EMPTY_REPLY_NOTE = (
    "Your previous reply was empty (no text and no tool call{why}). Reply again: answer the "
    "request above or call a tool."
)


def is_empty_reply(response: AIMessage) -> bool:
    return not pending_tool_calls(response) and not message_text(response).strip()


def finish_reason(response: AIMessage) -> str:
    return str((response.response_metadata or {}).get("finish_reason") or "")


async def ask_again_if_empty(
    caller: ModelCaller, llm: BaseChatModel, request: list[BaseMessage], tools: list[BaseTool], response: AIMessage,
    *, fail: bool = True, options: dict[str, Any],
) -> AIMessage:
    """An empty reply (content filter, or nothing at all) is asked again once with a
    short note; a second empty reply fails the run with a one-line ModelReplyError
    (or, with ``fail=False``, is returned for the caller's fallback answer). ``options``: the
    ``caller``'s (spec, fallbacks, state, runtime)."""
    if not is_empty_reply(response):
        return response
    reason = finish_reason(response)
    emit("error", node="agent", error="empty reply from the model; asking again", finish_reason=reason)
    note = EMPTY_REPLY_NOTE.format(why=f"; finish_reason {reason!r}" if reason and reason != "stop" else "")
    again = (await caller(llm, [*request, HumanMessage(content=note)], tools, **options)).message
    if is_empty_reply(again) and fail:
        reason = finish_reason(again) or reason
        why = f" (finish_reason {reason!r})" if reason else ""
        raise ModelReplyError(f"The model gave an empty reply twice{why}: no answer to report.")
    return again


@dataclass
class Reply:
    """A model call's outcome: the reply, the structured output parsed from it (a structured
    call), and the state updates middleware layers returned beside it."""

    message: AIMessage
    parsed: Any = None
    commands: list[dict[str, Any]] = field(default_factory=list)


class ModelCaller:
    """How a node calls its model: straight, or through the middleware's ``wrap_model_call``
    layers (``policies/hooks.py``) with a ``ModelRequest`` they may change - messages, system
    message, tools, tool choice, model settings, the model itself - and a response they may
    replace. The innermost layer calls the model as the node would, with the run's fallbacks (a
    model a layer swapped in has none, and no price of its own). ``binding``: how tools are
    bound (a node's :class:`ToolBinding` reuses its bindings)."""

    def __init__(self, hooks: Hooks | None = None, binding: Binding | None = None) -> None:
        self.hooks = hooks or Hooks()
        self.binding: Binding = binding or (lambda model, tools: bind_submit(model, tools) if tools else model)

    async def __call__(
        self, llm: Any, request: list[BaseMessage], tools: Sequence[BaseTool | dict[str, Any]] = (), *,
        spec: str | None, fallbacks: Sequence[Fallback] = (), state: Mapping[str, Any] | None = None,
        runtime: Any = None, tool_choice: str | None = None, structured: Callable[[Any], Any] | None = None,
    ) -> Reply:
        """The model's reply to ``request`` (its first message may be the system message).
        ``tool_choice``: force a tool; ``structured``: turn the model into a structured-output
        runnable (``with_structured_output(..., include_raw=True)``) instead of binding tools."""
        if not self.hooks.model_layers:  # (no layer to give a request to: the model is called at once)
            shape = self._shape(list(tools), tool_choice, {}, structured)
            rebound = rebind_all(fallbacks, shape) if fallbacks else ()
            return _reply(await invoke_model(shape(llm), request, spec=spec, fallbacks=rebound))
        system = request[0] if request and isinstance(request[0], SystemMessage) else None
        model_request = ModelRequest(
            model=llm, messages=cast(Any, list(request[1:] if system is not None else request)), system_message=system,
            tools=list(tools), tool_choice=tool_choice, state=cast(Any, state or {}), runtime=runtime,
        )  # fmt: skip

        async def execute(req: ModelRequest) -> ModelResponse:
            own = req.model is llm
            messages = [req.system_message, *req.messages] if req.system_message is not None else list(req.messages)
            shape = self._shape(req.tools, req.tool_choice, req.model_settings, structured)
            rebound = rebind_all(fallbacks, shape) if own and fallbacks else ()
            result = await invoke_model(shape(req.model), messages, spec=spec if own else None, fallbacks=rebound)
            reply = _reply(result)
            return ModelResponse(result=[reply.message], structured_response=reply.parsed)

        call = await self.hooks.call_model(model_request, execute)
        commands = [dict(c.update) for c in call.commands if isinstance(c.update, Mapping)]
        return Reply(as_ai_message(call.message), call.response.structured_response, commands)

    def _shape(
        self, tools: list[Any], choice: Any, settings: dict[str, Any], structured: Callable[[Any], Any] | None
    ) -> Callable[[Any], Any]:
        """What is invoked for a request: the model with its ``tools`` bound (a forced tool
        ``choice``, the request's model ``settings``), or turned into a structured-output runnable."""
        if structured is not None:
            return structured

        def shape(model: Any) -> Any:
            if choice is not None:
                runnable = bind_submit(model, tools, tool_choice=choice)
            else:
                runnable = self.binding(model, tools)
            return runnable.bind(**settings) if settings else runnable

        return shape


def _reply(result: Any) -> Reply:
    """A model call's :class:`Reply`: the reply, and the parsed value of a structured call's
    ``{"raw": reply, "parsed": value}``."""
    if isinstance(result, dict) and "raw" in result:
        return Reply(as_ai_message(result["raw"]), result.get("parsed"))
    return Reply(as_ai_message(result))


async def ended_run(
    hooks: Hooks, view: Mapping[str, Any], writes: list[dict[str, Any]], runtime: Any, jump: str | None
) -> list[dict[str, Any]]:
    """``writes`` and the ``after_agent`` hooks' updates, when the run ends (``jump`` "end")."""
    if jump != "end" or not hooks.after_agent:
        return writes
    result = await hooks.run_state_hooks(hooks.after_agent, view, runtime)
    return [*writes, *result.updates]


def turn_ended_run(state: Mapping[str, Any]) -> bool:
    """Whether the last model turn ended the run: its reply (the last message) calls no tool
    and no output schema waits to validate it."""
    messages = state.get("messages") or []
    last = messages[-1] if messages else None
    if kept(state, "stopped"):
        return True
    return isinstance(last, AIMessage) and not pending_tool_calls(last) and not run_setting(state, "output_schema")


def make_after_model_node(hooks: Hooks) -> Callable:
    """``after_model``: the middleware's ``after_model`` hooks (the last first), on the state the
    ``agent`` node's turn left, and the ``after_agent`` hooks when the turn ends the run. A node of
    its own, beside ``agent``, so that a hook that pauses the run (LangChain's
    ``HumanInTheLoopMiddleware`` asks a person about the reply's tool calls) is resumed without
    calling the model again: the reply it reviews is the checkpointed one."""

    async def after_model(state: AgentState, runtime: Runtime[AgentContext]) -> Any:
        if not hooks.after_model:
            return {}
        after = await hooks.run_state_hooks(hooks.after_model, state, runtime)
        writes = after.updates
        if after.jump == "end" or (after.jump is None and turn_ended_run(after.state)):
            writes = await ended_run(hooks, after.state, writes, runtime, "end")
        return hooks.node_output(writes, after.jump)

    return after_model


def make_agent_node(
    registry: ToolRegistry,
    model: BaseChatModel | None = None,
    budget: ContextBudget | None = None,
    hooks: Hooks | None = None,
    *,
    budget_offers: bool = False,
) -> Callable:
    """``budget`` (history/budget.py ContextBudget) guards the size of every request; ``hooks``:
    the user's middleware (``before_model`` and ``wrap_model_call`` each turn; ``after_agent``
    when the turn ends the run). Their ``after_model`` hooks run in the ``after_model`` node
    (:func:`make_after_model_node`), after the turn's reply is checkpointed. ``budget_offers``:
    the budget's ``offered`` tools are this node's offer (a single agent's graph, not a team's
    member), so the turn takes the request the budget assembled (``ContextBudget.assemble``)."""
    hooks = hooks or Hooks()
    caller = ModelCaller(hooks, ToolBinding())

    async def agent(state: AgentState, runtime: Runtime[AgentContext]) -> Any:
        if not hooks:
            return await turn(state, runtime, [])
        before = await hooks.run_state_hooks(hooks.before_model, state, runtime)
        writes = before.updates
        if before.jump is not None and before.jump != "model":
            return hooks.node_output(await ended_run(hooks, before.state, writes, runtime, before.jump), before.jump)
        update = await turn(cast(AgentState, before.state), runtime, writes)
        writes += [update]
        if not hooks.after_model and "answer" in update:  # the run ends here
            writes = await ended_run(hooks, hooks.apply(before.state, update), writes, runtime, "end")
        return hooks.node_output(writes)

    async def turn(state: AgentState, runtime: Runtime[AgentContext], extra: list[dict[str, Any]]) -> dict[str, Any]:
        ctx = AgentContext.of(runtime)
        with metered(state, ctx) as meter:  # the run's model calls, tokens and cost (usage.py)
            spent = meter.spent()
            if spent:
                return {**spent_turn(state, meter, spent), "usage": meter.total()}
            # Building a client reads certificates from disk: keep it off the event loop.
            llm = model or await aload_chat_model(ctx.model, **model_options(ctx))
            tools, request, stop = prepare(state, ctx, meter)
            spec = None if model else ctx.model
            fallbacks = model_fallbacks(ctx)
            options: dict[str, Any] = {"spec": spec, "fallbacks": fallbacks, "state": state, "runtime": runtime}
            try:
                reply = await caller(llm, request, tools, **options)
                response = reply.message
                extra.extend(reply.commands)
                calls = pending_tool_calls(response)
                if not calls and not run_setting(state, "output_schema") and not stop:
                    # (with an output schema, structuredOutput sends an empty answer back.) At the tool
                    # limit a second empty reply gets the fixed answer below.
                    must_answer = bool(kept(state, "finalize") or tool_limit_reached(state))
                    response = await ask_again_if_empty(
                        caller, llm, request, tools, response, fail=not must_answer, options=options,
                    )  # fmt: skip
                    calls = pending_tool_calls(response)
            except ModelBudgetError as exc:  # the request failed and the budget leaves no retry: answer
                emit("error", node="agent", error=str(exc))
                return {**spent_turn(state, meter, meter.spent() or "model_calls"), "usage": meter.total()}
            return {**finish(state, ctx, response, calls, bool(tools), stop), "usage": meter.total()}

    def spent_turn(state: AgentState, meter: Meter, reason: str) -> dict[str, Any]:
        """No model call is left (a worker or sub-agent of a run whose budget is spent): answer without one."""
        meter.finalize_event(reason, called=False)
        turns = count_of(state, "turns") + 1
        made = count_of(state, "tool_calls_made")
        emit("final_answer", answer=BUDGET_SPENT_ANSWER, turns=turns, tool_calls_made=made)
        return {"turns": turns, "answer": BUDGET_SPENT_ANSWER, "messages": [AIMessage(content=BUDGET_SPENT_ANSWER)]}

    def prepare(
        state: AgentState, ctx: AgentContext, meter: Meter
    ) -> tuple[list[BaseTool], list[BaseMessage], str | None]:
        """The turn's tools, its request (within the context budget) and why the run's budget
        makes it the last one (None: it is not)."""
        if budget is not None and budget_offers:  # (the request the route after a tool turn measured)
            system, tools = budget.assemble(ctx, state, take=True)
        else:
            system, tools = build_system_prompt(ctx, state), offered_tools(ctx, registry, state)
        request: list[BaseMessage] = [system_message(system), *state.get("messages", [])]
        if budget is not None:
            request = budget.fit_request(ctx, request, tools)
        # The run's budget: when this turn must be its last, it answers without tools.
        stop = meter.stop(lambda: count_request(budget.counter if budget else resolve_counter(), request, tools))
        if stop:
            meter.finalize_event(stop)
            tools = []
            request = [SystemMessage(content=f"{message_text(request[0])}\n\n{BUDGET_NOTICE}"), *request[1:]]
        return tools, request, stop

    def finish(
        state: AgentState, ctx: AgentContext, response: AIMessage, calls: list[dict], offered: bool, stop: str | None
    ) -> dict[str, Any]:
        """The turn's update from the model's reply (``offered``: whether the turn offered tools),
        its calls counted against the run's tool-call limits (those over one answered)."""
        turns = count_of(state, "turns") + 1
        if streaming():  # (the events' payloads are built only for a run that streams them)
            emit("usage", turn=turns, **usage_of(response))
            if calls and (said := message_text(response).strip()):
                emit("model_text", text=preview(said, 2000), turn=turns)  # what it says beside its calls
        update: dict[str, Any] = {"turns": turns}
        if not offered and calls:
            # Nothing was offered, so nothing can run: keep the text, drop the calls,
            # and never leave unanswered tool calls in the thread's history.
            response = AIMessage(content=message_text(response), id=response.id, usage_metadata=response.usage_metadata)
            calls = []
        # A final answer (no tool calls) ends the loop here, unless the run has an output
        # schema: then the structuredOutput node validates it and sets the answer.
        if not calls and not run_setting(state, "output_schema"):
            answer = message_text(response).strip()
            if not answer and stop:
                answer = BUDGET_SPENT_ANSWER
            if not answer and (kept(state, "finalize") or tool_limit_reached(state)):
                answer = "I reached the tool-call limit before I could finish, and the model gave no final text."
            update["answer"] = answer
            emit("final_answer", answer=answer, turns=turns, tool_calls_made=count_of(state, "tool_calls_made"))
        update["messages"] = [response]
        if calls and ctx.tool_call_limits:
            limited = limit_reply(state, ctx, response, calls)
            update = joined_update(update, {**limited, "messages": [response, *limited.get("messages", [])]})
            if kept(limited, "stopped"):
                emit("final_answer", answer=limited["answer"], turns=turns,
                     tool_calls_made=count_of(state, "tool_calls_made"))  # fmt: skip
        return update

    return agent
