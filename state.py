"""Every state schema of smart-agent, with its reducers.

``InputState`` is what callers pass in; ``AgentState`` is what the agent loop keeps.
Large tool outputs never ride in ``messages``: see ``archive`` (context management).
"""

from __future__ import annotations

import operator
import uuid
from collections.abc import Mapping
from typing import Annotated, Any, Final, get_type_hints

from langchain_core.messages import AIMessage, AnyMessage, HumanMessage, SystemMessage, ToolMessage
from langgraph.graph.message import add_messages
from typing_extensions import TypedDict

# Message classes that add_messages takes as they are (not chunks, not RemoveMessage).
_PLAIN = frozenset({AIMessage, HumanMessage, ToolMessage, SystemMessage})
_message_id = operator.attrgetter("id")


def merge_messages(left: Any, right: Any) -> Any:
    """The ``messages`` reducer of every state here: LangGraph's ``add_messages(left, right)``
    (a new list; neither argument is changed), with its common case taken at once. A node's
    new messages (an AI reply, tool results) usually only append: then they are added as they
    are, ids given as ``add_messages`` gives them, after one check in C that no message of the
    thread has one of their ids or none at all - instead of every message of the thread being
    converted and indexed again at every step (~27 us at 200 messages, ~8 us this way).
    Anything else (one message alone, a dict, a chunk, a RemoveMessage, a reused id, a thread
    holding a message without an id or in dict form) goes to ``add_messages`` itself. The one
    difference: a message chunk already in the thread (only ``Overwrite`` can put one there)
    stays a chunk when new messages are appended."""
    if type(right) is not list or type(left) is not list:
        return add_messages(left, right)
    ids: set[Any] = {None}  # (the ids the messages came with: one given here is new, it cannot be in ``left``)
    for m in right:
        if type(m) not in _PLAIN:
            return add_messages(left, right)
        if m.id is None:
            m.id = str(uuid.uuid4())
        else:
            ids.add(m.id)
    if len(right) > 1 and len({m.id for m in right}) != len(right):
        return add_messages(left, right)
    try:
        known = _ids_of(left)
    except AttributeError:  # a message in dict form (a state written from outside a run)
        return add_messages(left, right)
    if not ids.isdisjoint(known):
        return add_messages(left, right)
    merged = [*left, *right]
    _remember_ids(merged, known.union(m.id for m in right))
    return merged


# The message ids of the lists merge_messages returned last (by the list's identity and length):
# the next step's ``left`` is usually one of them, so a step checks only its new messages' ids
# instead of every message of the thread (LangGraph merges each write twice: once into the state,
# once into the copy a conditional edge reads).
_KNOWN: dict[int, tuple[list[Any], int, frozenset[Any]]] = {}
_KNOWN_SIZE = 16


def _ids_of(messages: list[Any]) -> frozenset[Any]:
    hit = _KNOWN.get(id(messages))
    if hit is not None and hit[0] is messages and hit[1] == len(messages):
        return hit[2]
    return frozenset(map(_message_id, messages))


def _remember_ids(messages: list[Any], ids: frozenset[Any]) -> None:
    while len(_KNOWN) >= _KNOWN_SIZE:
        try:
            del _KNOWN[next(iter(_KNOWN))]
        except (KeyError, StopIteration, RuntimeError):  # (another thread took it first)
            break
    _KNOWN[id(messages)] = (messages, len(messages), ids)


def merge_entries(left: dict[str, Any] | None, right: dict[str, Any] | None) -> dict[str, Any]:
    """The reducer of a dict key whose writes add or replace entries: the archive index (the same
    execution id twice is the same text) and the run's settings (a state written with
    ``update_state``, as Studio writes one, may change one setting and keep the others)."""
    return {**(left or {}), **(right or {})}


def count_of(state: Mapping[str, Any], key: str, default: int = 0) -> int:
    """Counter or limit ``key`` of a state as an int: ``default`` when it is missing,
    None or 0 (a state written from outside a run, e.g. update_state, may hold any)."""
    return int(state.get(key) or default)


def entries_of(state: Mapping[str, Any], key: str) -> Mapping[str, Any]:
    """The dict a state holds under ``key`` (``run_settings``, ``bookkeeping``): {} when it holds
    none or something else (a state written from outside a run, e.g. update_state, may hold any)."""
    value = state.get(key)
    if type(value) is dict:  # (the common case, without an ABC check)
        return value
    return value if value is not None and isinstance(value, Mapping) else {}


def kept(state: Mapping[str, Any], name: str, default: Any = None) -> Any:
    """Entry ``name`` of the loop's bookkeeping (``AgentState.bookkeeping``): ``default`` when the
    state has none (a state written from outside a run, or a hand-built one)."""
    value = entries_of(state, "bookkeeping").get(name)
    return default if value is None else value


def kept_entries(state: Mapping[str, Any], name: str) -> Mapping[str, Any]:
    """Entry ``name`` of the loop's bookkeeping that holds a dict (``loop_guard``, the tool-call
    counts): {} when the state holds none or something else."""
    return entries_of(entries_of(state, "bookkeeping"), name)


def kept_count(state: Mapping[str, Any], name: str) -> int:
    """Counter ``name`` of the loop's bookkeeping as an int (:func:`count_of`: 0 when unset)."""
    return count_of(entries_of(state, "bookkeeping"), name)


def keep(update: dict[str, Any], **entries: Any) -> dict[str, Any]:
    """Add ``entries`` to the bookkeeping a state ``update`` writes (``update`` itself, changed):
    one node's update writes the key once, with every entry its hooks set."""
    update["bookkeeping"] = {**entries_of(update, "bookkeeping"), **entries}
    return update


#: The keys of the agent state whose writes add or replace entries (``merge_entries``): two
#: updates of one node join them entry by entry (:func:`joined_update`).
ENTRY_KEYS: Final = ("bookkeeping", "run_settings", "archived")


def joined_update(first: Mapping[str, Any] | None, then: Mapping[str, Any]) -> dict[str, Any]:
    """One node's state update ``first`` and then ``then``, as one: ``then`` wins, except that the
    entries of both under an :data:`ENTRY_KEYS` key are kept (as the reducer would keep them)."""
    joined = {**(first or {}), **then}
    for key in ENTRY_KEYS:
        if first and key in first and key in then:
            joined[key] = merge_entries(first[key], then[key])
    return joined


def run_setting(state: Mapping[str, Any], name: str, default: Any = None) -> Any:
    """Setting ``name`` of the run (``AgentState.run_settings``, written by the resolver at its
    start): ``default`` when the state has none (a state written from outside a run, e.g.
    ``update_state``, or a hand-built one)."""
    value = entries_of(state, "run_settings").get(name)
    return default if value is None else value


class InputState(TypedDict, total=False):
    """What a caller passes: a task string, messages, or both (the task is appended)."""

    messages: Annotated[list[AnyMessage], merge_messages]
    task: str


class OutputState(TypedDict, total=False):
    messages: Annotated[list[AnyMessage], merge_messages]
    answer: str
    # What the run used: {model_calls, input_tokens, output_tokens, cost_usd} (usage.py).
    usage: dict[str, Any]
    # What the thread's earlier runs used, summed (models/usage.thread_total adds this run's).
    thread_usage: dict[str, Any]


class AgentState(InputState, total=False):
    """State of the agent loop graph."""

    answer: str
    # Tool executions in the current run (reset by the resolver at each run start).
    tool_calls_made: int
    # Model turns in the current run.
    turns: int
    # What the run starts with and keeps to its end (a resume keeps the paused run's), written by
    # the resolver as one key (LangGraph walks every key of the state at every step; read an entry
    # with run_setting; a write adds or replaces entries): its limits copied from the context -
    # "max_tool_calls" (the tool-call budget), "context_token_limit", "output_schema" (the
    # effective JSON Schema of the final answer; None: free text) - and what its system prompt
    # lists, read at its start (tools/skills.py): "project_instructions" (the AGENTS.md blocks;
    # "": none) and "skills" (the run's skills folders, policies/skills.skills_key -> their listing).
    run_settings: Annotated[dict[str, Any], merge_entries]
    # The loop's own bookkeeping, one key (LangGraph copies every key of the state at every
    # decision of a conditional edge; read an entry with kept(), write entries with keep(): a
    # write adds or replaces entries). Reset by the resolver at each run start unless said:
    # - "finalize": set by toolLimitFinalize: the next agent turn is offered no tools;
    # - "notice": text added to the system prompt of the next model turn (a finalization or loop
    #   notice);
    # - "after_tools" (not reset): "pending" once the tools node ran: the agent's step decides
    #   where the run goes (nodes/after_tools.py); then the node it sent the run to instead of
    #   calling the model (handoff, toolLimitFinalize, summarize), cleared by the next model turn;
    # - "loop_guard": loop detection (policies/loop_guard.py), written whole: "limit" (the run's
    #   loop_limit; 0: off), "calls" (the last calls, at most LOOP_PERIODS, as the
    #   call_signature() of their canonical effect, oldest first), "runs" (for each period p =
    #   1..LOOP_PERIODS: how many calls in a row, up to the last, each repeat the call p before
    #   them, counting the first p: a cycle of p calls made n times is n * p) and "cycle" (the
    #   cycle found: {action: notice|finalize, period, repeats, tools}; {}: none);
    # - "retrievals_made": get_tool_response calls this run (they do not count against
    #   max_tool_calls); "output_retries": invalid structured answers sent back to the model;
    # - "run_tool_calls" and "thread_tool_calls" (the thread's not reset): tool-call limits
    #   (policies/tool_call_limits.py), each limit's key (its tool, "*": all) -> calls counted in
    #   the run and in the thread;
    # - "stopped": why the run stopped before the model answered ("tool_call_limit"; "": it did not).
    bookkeeping: Annotated[dict[str, Any], merge_entries]
    # --- human in the loop (policies/review.py, the "human" node): call id -> the person's decision
    # for a call of the last model turn ({"type": "reject", "message"} or {"type": "answer",
    # "text"} for ask_user); the tools node answers those calls without running them, then clears
    # it. The run's approve and ask_user settings, copied from the context by the resolver: a
    # resumed run (its own context) reviews the same calls as the run that paused. (Keys of their
    # own, not bookkeeping entries: a thread checkpointed by an earlier version between a person's
    # decision and the tools that follow it keeps the decision and the settings it was made under.)
    reviews: dict[str, dict]
    approve: str
    ask_user: bool
    # --- handoffs (a team of agents, build_agent_graph(agents=...)): only a team's state has them
    # The member that holds the thread; kept across runs of the thread.
    active_agent: str
    # Handoffs made in the current run.
    handoffs: int
    # --- long-term memory: set by memory_recall at run start
    # Text block of recalled long-term memories, appended to the system prompt.
    memory_context: str
    # The recalled memories as dicts (key, text, score, similarity, age...).
    recalled_memories: list[dict]
    # --- context management: history/, nodes/summarize.py, archive.py, tools/context_tools.py
    # Archived tool outputs: execution id -> metadata (tool, chars...). The text itself
    # lives in the archive ($SMART_AGENT_HOME/archive or runtime.store), never in state.
    archived: Annotated[dict[str, dict], merge_entries]
    # Context compactions so far in this thread.
    compactions: int
    # The todo list (planning mode): [{"id": int, "content": str, "status": pending|in_progress|done}].
    todos: list[dict]
    # The validated final answer when output_schema is set.
    structured_response: Any
    # --- run budgets (usage.py): {model_calls, input_tokens, output_tokens, cost_usd} of the run.
    usage: dict[str, Any]
    thread_usage: dict[str, Any]  # the thread's earlier runs (models/usage.thread_total)


class AgentOutputState(OutputState, total=False):
    """What an agent loop run returns (``invoke``, ``runs.wait``; the whole state stays in the
    thread's checkpoints, ``get_state``): the answer and what a caller reads about the run.
    The loop's own bookkeeping (limits copied from the context, loop detection, reviews...)
    stays inside: LangGraph reads every output key after every step of the run."""

    # The validated final answer when the run has an output schema.
    structured_response: Any
    todos: list[dict]
    tool_calls_made: int
    turns: int
    compactions: int
    archived: Annotated[dict[str, dict], merge_entries]
    active_agent: str
    handoffs: int
    memory_context: str
    recalled_memories: list[dict]


#: The keys only a team's state (and output) has: a single agent's graph leaves them out (LangGraph
#: walks every key of the state at every step).
TEAM_KEYS: Final = ("active_agent", "handoffs")


def without_keys(schema: type, keys: tuple[str, ...]) -> type:
    """A state schema like ``schema`` (a TypedDict of this module), without ``keys``."""
    kept = tuple(k for k in get_type_hints(schema) if k not in keys)
    return only_keys(schema, kept, schema.__name__)


def only_keys(schema: type, keys: tuple[str, ...], name: str) -> type:
    """A TypedDict ``name`` of those of ``keys`` that ``schema`` (a state TypedDict) has, each
    declared as ``schema`` declares it (the same channel: a graph can read the state through it)."""
    hints = get_type_hints(schema, include_extras=True)
    return TypedDict(name, {k: hints[k] for k in keys if k in hints}, total=False)  # type: ignore[operator]


def merge_step_results(left: dict[str, Any] | None, right: dict[str, Any] | None) -> dict[str, Any]:
    """Planner step results keyed by step id: later writes win; a ``None`` value deletes the id."""
    merged = dict(left or {})
    for key, value in (right or {}).items():
        if value is None:
            merged.pop(key, None)
        else:
            merged[key] = value
    return merged


class PlannerOutputState(OutputState, total=False):
    """What a planner run returns: the answer plus the plan and what became of each step."""

    plan: dict[str, Any] | None
    status: str
    step_results: dict[str, Any]
    halt: dict[str, Any] | None
    error: str | None
    plan_errors: list[str]
    # Tool executions of the run: every attempt of every step, retries included.
    tool_calls_made: int


class PlannerState(InputState, total=False):
    """State of the plan-then-execute graph (``graphs/planner.py``).

    Each step result lands in ``step_results`` under its id (dict-merge reducer), so
    a resumed thread knows exactly which steps already finished and never re-runs them.
    """

    answer: str
    # The validated plan being executed: ``Plan.model_dump()`` (nodes/planner/schema.py).
    plan: dict[str, Any] | None
    # planning | plan_invalid | planned | approved | approval_invalid | rejected |
    # running | halted | done | planning_failed
    status: str
    # Problems with the last plan the model (or an approval edit) produced.
    plan_errors: list[str]
    # Model attempts in the current planning round.
    plan_attempts: int
    # The conversation of the current planning round (prompt, replies, error feedback).
    planner_messages: list[AnyMessage]
    # step id -> {id, tool, args, status: ok|failed|skipped, output, error, attempts, round, ...}
    step_results: Annotated[dict[str, Any], merge_step_results]
    # Step ids the last dispatch sent to run_step (bounded by max_parallel_tools).
    ready: list[str]
    # Dispatch rounds so far (a superstep of parallel steps each).
    round: int
    # Revised plans made after a halt.
    replans: int
    # The failure(s) that halted execution: {"steps": [...], "errors": {...}}.
    halt: dict[str, Any] | None
    # A planning / approval error in words (also in ``answer`` when the run ends on it).
    error: str | None
    # Limits copied from the context at the start of a run, so routing reads only state.
    approve_plan: bool
    max_plan_attempts: int
    max_replans: int
    max_parallel: int
    # The run's tool budget (context max_tool_calls) and what it has used: every step
    # attempt counts; dispatch never sends more attempts than are left.
    max_tool_calls: int
    tool_calls_made: int
    # Attempts each step of the current superstep may make: 0 (the budget paid no first attempt)
    # or 1 + its retries, each retry paid from the run's budget when it starts.
    step_budgets: dict[str, int]
    # The key of the meter the steps of the current superstep share (usage.shared_meter).
    budget_key: str
    # step id -> the human's decision on a step whose tool needs approval (approval.py).
    step_reviews: Annotated[dict[str, Any], merge_step_results]
    # [{id, name, args}]: the ready steps whose tool needs approval and that have no decision
    # yet, args with references resolved (what would run); set by dispatch, answered by review_steps.
    awaiting_review: list[dict[str, Any]]
    # The run's approve setting, copied from the context by prepare: a resume (with a context of
    # its own, or none) holds the same steps as the run that paused.
    approve: str
    # {model_calls, input_tokens, output_tokens, cost_usd} of the run (usage.py).
    usage: dict[str, Any]
    thread_usage: dict[str, Any]  # the thread's earlier runs (models/usage.thread_total)


# --- multi-agent: graphs/fleet.py, graphs/dual.py (teams use AgentState)


class FleetOutputState(OutputState, total=False):
    """What a fleet run returns: the aggregated answer plus every worker's result."""

    subtasks: list[dict[str, Any]]
    results: dict[str, Any]
    status: str
    # Tool executions of the run, every worker's included.
    tool_calls_made: int


class FleetState(InputState, total=False):
    """State of the fleet graph: a goal split into subtasks run by parallel worker agents."""

    answer: str
    # The goal being worked on (the task, or the last user message).
    goal: str
    # The validated subtasks: [{"id": "w1", "task": "..."}], in the model's order.
    subtasks: list[dict[str, Any]]
    # worker id -> {id, task, ok, answer, error, duration_s, round}; one writer per id.
    results: Annotated[dict[str, Any], merge_step_results]
    # Worker ids the last dispatch sent (at most max_workers).
    ready: list[str]
    round: int
    max_workers: int
    # decomposing | running | done
    status: str
    error: str | None
    # {model_calls, input_tokens, output_tokens, cost_usd} of the run, workers included (usage.py).
    usage: dict[str, Any]
    thread_usage: dict[str, Any]  # the thread's earlier runs (models/usage.thread_total)
    # The key of the meter the workers of the current round share (usage.shared_meter).
    budget_key: str
    # Tool executions of the run: every worker's (and its sub-agents'), counted against the run's
    # max_tool_calls, which the workers share.
    tool_calls_made: int




class DualOutputState(OutputState, total=False):
    thoughts: list[str]
    assets: dict[str, Any]
    iterations: int
    # Tool executions of the run: every planner run's.
    tool_calls_made: int


class DualState(InputState, total=False):
    """State of the dual graph: a reasoning loop that hands objectives to the planner."""

    answer: str
    goal: str
    # Brainstormed thoughts, oldest first.
    thoughts: list[str]
    # asset id -> {id, objective, answer, status}: execution results later iterations see.
    assets: Annotated[dict[str, Any], merge_step_results]
    # Decisions taken this run: [{"action": ..., ...}].
    decisions: list[dict[str, Any]]
    iterations: int
    max_iterations: int
    # The objective the last "execute" decision handed to the planner.
    objective: str
    # Why the last reply could not be parsed as a decision (sent back on the next turn).
    decision_error: str
    # {model_calls, input_tokens, output_tokens, cost_usd} of the run, planner included (usage.py).
    usage: dict[str, Any]
    thread_usage: dict[str, Any]  # the thread's earlier runs (models/usage.thread_total)
    # Tool executions of the run: every planner run's, all within the run's one max_tool_calls.
    tool_calls_made: int
