"""Run configuration: per-graph context classes (LangGraph ``context_schema``).

``BaseContext`` holds what every graph uses; ``AgentContext``, ``PlannerContext``,
``DualContext`` (a planner inside) and ``FleetContext`` (agent workers inside) add only
their own fields, so Studio shows each graph only its own. ``Context`` has every field:
the CLI builds it and any graph accepts it. Studio renders every field with its
description; the CLI maps its flags onto the same fields; defaults fall back to
environment variables of the same name with a ``SMART_AGENT_`` prefix (for example
``SMART_AGENT_MAX_TOOL_CALLS=10``, read through ``settings.field_env``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from functools import cache
from typing import Annotated, Any, Literal, Self, TypeVar, get_type_hints

from .checks import (
    FIELD_BOUNDS,
    FIELD_RULES,
    checked_once,
    env_field,
    field_value_problem,
    parse_bool,
    shown,
)
from .controls import RunControls

__all__ = [
    "AgentContext", "BaseContext", "CONTEXT_CLASSES", "Context", "DualContext", "FIELD_BOUNDS", "FIELD_RULES",
    "FleetContext", "GRAPH_CONTEXTS", "PlannerContext", "coerce_context", "context_field", "context_field_names",
    "context_flag", "field_problem", "field_types", "validate_context",
]
C = TypeVar("C", bound="BaseContext")

DEFAULT_MODEL = "openai:gpt-4o-mini"

ReasoningMode = Literal["direct", "two_phase"]

DEFAULT_SYSTEM_PROMPT = (
    "You are smart-agent, a careful autonomous assistant. Use the tools you are given when "
    "they help; never guess a value a tool can compute or look up. When the task is done, "
    "answer directly and concisely without calling more tools."
)


def env_default(name: str, default: Any) -> Any:
    """``SMART_AGENT_<NAME>`` as field ``name``'s value (``context_types.env_field``)."""
    return env_field(name, field_types()[name], default)


_env = env_default


def _d(description: str, **extra: Any) -> dict[str, Any]:
    return {"description": description, **extra}


@dataclass(kw_only=True)
class BaseContext(RunControls):
    """What every graph is configured with: model, prompt, tools, workspace, network,
    timeouts, budgets, long-term memory, context management; approval and run budgets
    (``context_controls.RunControls``). All fields are optional."""

    model: Annotated[str, {"__template_metadata__": {"kind": "llm"}}] = field(
        default_factory=lambda: _env("model", DEFAULT_MODEL),
        metadata=_d(
            "Chat model as 'provider:model' (init_chat_model), e.g. 'openai:gpt-4o-mini', "
            "'anthropic:claude-sonnet-4-5', 'ollama:llama3.1'. OPENAI_BASE_URL selects any "
            "OpenAI-compatible server. Default: $SMART_AGENT_MODEL or openai:gpt-4o-mini."
        ),
    )
    system_prompt: str = field(
        default_factory=lambda: _env("system_prompt", DEFAULT_SYSTEM_PROMPT),
        metadata=_d("System prompt of the agent."),
    )
    max_tool_calls: int = field(
        default_factory=lambda: _env("max_tool_calls", 20),
        metadata=_d(
            "Hard bound on tool executions per run, retries included: one budget for the whole run, "
            "shared by a fleet's workers, sub-agents and planner steps. When reached, the next model "
            "turn is offered no tools and must answer."
        ),
    )
    max_parallel_tools: int = field(
        default_factory=lambda: _env("max_parallel_tools", 5),
        metadata=_d("How many tool calls of one model turn run concurrently."),
    )
    tools: list[str] | None = field(
        default=None,
        metadata=_d(
            "Names of registry tools to offer (see `smart-agent tools`). Empty/None offers "
            "every registered tool."
        ),
    )
    workspace: str = field(
        # Empty means "the current folder", resolved when a tool runs (not here:
        # contexts are built on the server's event loop, where os.getcwd blocks).
        default_factory=lambda: _env("workspace", ""),
        metadata=_d("Folder the file tools are confined to. Empty: $SMART_AGENT_WORKSPACE or the current folder."),
    )
    allow_private_network: bool = field(
        default_factory=lambda: _env("allow_private_network", False),
        metadata=_d(
            "Let URL tools reach private, loopback and link-local addresses. Off by default "
            "(protects against SSRF)."
        ),
    )
    tool_timeout_s: float = field(
        default_factory=lambda: _env("tool_timeout_s", 60.0),
        metadata=_d("Default timeout of one tool execution in seconds (a tool's own metadata may set a lower one)."),
    )
    tool_retries: int = field(
        default_factory=lambda: _env("tool_retries", 0),
        metadata=_d(
            "Extra attempts of a tool call whose failure may not repeat (a timeout, a connection error, "
            "a RetryableToolError), with exponential backoff; a tool's own ToolMeta.retries wins when set. "
            "Each attempt counts against max_tool_calls."
        ),
    )
    fallback_models: list[str] = field(
        default_factory=lambda: _env("fallback_models", []),
        metadata=_d(
            "Models ('provider:model') that get the same request, in order, when a model call fails with "
            "a provider error (HTTP 429/5xx, unreachable, timed out) after its retries; never for "
            "configuration errors (credentials, unknown model)."
        ),
    )
    model_timeout_s: float = field(
        default_factory=lambda: _env("model_timeout_s", 120.0),
        metadata=_d(
            "Seconds one model request may wait for the service (connect, and each read of the reply) before it fails."
        ),
    )
    model_max_retries: int = field(
        default_factory=lambda: _env("model_max_retries", 2),
        metadata=_d(
            "Retries of a model request that failed (timed out, could not connect, HTTP 408/409/429/5xx; "
            "0: no retry). With an OpenAI-compatible model each retry is a model call of max_model_calls."
        ),
    )
    max_write_bytes: int = field(
        default_factory=lambda: _env("max_write_bytes", 10_000_000),
        metadata=_d(
            "Largest content (UTF-8 bytes) write_file may write; larger writes are refused before anything is written."
        ),
    )
    context_token_limit: int = field(
        default_factory=lambda: _env("context_token_limit", 24000),
        metadata=_d(
            "Token budget of every model request: system prompt, messages and tool schemas "
            "(4 characters per token unless a token counter is given). Before a turn that "
            "would exceed it, older history is compacted into a summary. Default 24000: room "
            "for a 32k-context model's answer, and far below the point where long prompts "
            "get slow, costly and less accurate on larger models."
        ),
    )
    summary_token_limit: int = field(
        default_factory=lambda: _env("summary_token_limit", 1000),
        metadata=_d(
            "Largest size of one summary of compacted history, in tokens (at most 15% of "
            "context_token_limit). Default 1000: room for the facts, numbers, file names and "
            "archived execution ids a long task needs, while leaving the budget to recent turns."
        ),
    )
    archive_threshold_chars: int = field(
        default_factory=lambda: _env("archive_threshold_chars", 2000),
        metadata=_d(
            "Tool outputs longer than this many characters are archived: the conversation gets "
            "a short view (head, tail, size) and an execution id, and get_tool_response reads "
            "the full text back. 0 turns archiving off."
        ),
    )
    memory: bool = field(
        default_factory=lambda: _env("memory", True),
        metadata=_d(
            "Long-term memory: recall relevant memories at the start of a run and write an "
            "observation of the task and its answer at the end (FAISS + SQLite under "
            "$SMART_AGENT_HOME/memory). Default: $SMART_AGENT_MEMORY or on."
        ),
    )
    memory_k: int = field(
        default_factory=lambda: _env("memory_k", 5),
        metadata=_d(
            "How many memories are recalled into the system prompt (ranked by similarity, recency and importance)."
        ),
    )
    user_id: str = field(
        default_factory=lambda: _env("user_id", "default"),
        metadata=_d("Whose memories to use: each user id has its own memory namespace."),
    )
    embedding_model: str = field(
        default_factory=lambda: _env("embedding_model", "local"),
        metadata=_d(
            "Embedding model of the memory: 'local' (bundled all-MiniLM-L6-v2, offline) or any "
            "LangChain 'provider:model', e.g. 'openai:text-embedding-3-small'."
        ),
    )
    max_agent_depth: int = field(
        default_factory=lambda: _env("max_agent_depth", 3),
        metadata=_d("sub_agent tool: deepest nesting of child agents; agents at this depth get no sub_agent tool."),
    )
    max_sub_agents: int = field(
        default_factory=lambda: _env("max_sub_agents", 2),
        metadata=_d("sub_agent tool: child agents running at once (per nesting level)."),
    )

    def __post_init__(self) -> None:
        errors = validate_context(self)
        if errors:
            raise ValueError("Invalid smart-agent configuration: " + "; ".join(errors))

    @classmethod
    def of(cls, runtime: Any) -> Self:
        """The context of a node's ``runtime`` as this class.

        LangGraph already turns a dict context into the graph's ``context_schema``, but
        it hands ``None`` on when a run gave no context (then: the defaults, with the
        environment's overrides); a context of another smart-agent class (the union
        ``Context`` of the CLI, a parent graph's class) is used as it is when it has
        this class's fields, else converted."""
        ctx = getattr(runtime, "context", None)
        return ctx if isinstance(ctx, cls) else coerce_context(ctx, cls)


@dataclass(kw_only=True)
class AgentContext(BaseContext):
    """The agent loop (``graphs/agent.py``; also fleet workers and sub-agents)."""

    reasoning: ReasoningMode = field(
        default_factory=lambda: _env("reasoning", "direct"),
        metadata=_d(
            "'direct': each agent turn is one model call. 'two_phase': the model first reasons "
            "with a single 'reasoning' tool (situation, plan, done), then acts with only the "
            "tools its plan names (all when it names none; none when it says done)."
        ),
    )
    use_todo_list: bool = field(
        default_factory=lambda: _env("use_todo_list", False),
        metadata=_d(
            "Planning mode: the system prompt gains planning rules and the model gets the "
            "manage_todo_list tool; the list is kept in the state ('todos') and every change "
            "is a 'plan' event."
        ),
    )
    output_schema: dict[str, Any] | None = field(
        default=None,
        metadata=_d(
            "JSON Schema of the final answer. When set, the run ends with a JSON object "
            "validated against it (state 'structured_response'); invalid answers go back to "
            "the model with the validation errors."
        ),
    )
    max_output_retries: int = field(
        default_factory=lambda: _env("max_output_retries", 2),
        metadata=_d(
            "How many times an answer that is not valid JSON for output_schema is sent back "
            "to the model before the run fails with StructuredOutputError."
        ),
    )
    max_tool_calls_per_turn: int = field(
        default_factory=lambda: _env("max_tool_calls_per_turn", 32),
        metadata=_d(
            "Most tool calls run from one model turn; the rest are answered 'skipped' (also bounded by max_tool_calls)."
        ),
    )
    loop_limit: int = field(
        default_factory=lambda: _env("loop_limit", 3),
        metadata=_d(
            "Loop detection: the same tool with the same arguments called this many times in a row gives the next "
            "turn a notice that the model is repeating itself; once more and the run is finalized as at the tool "
            "limit (no tools, an answer). 0: off."
        ),
    )
    max_tool_arg_chars: int = field(
        default_factory=lambda: _env("max_tool_arg_chars", 100_000),
        metadata=_d(
            "Largest tool-call arguments (characters of JSON) a call may carry; larger calls are refused and shrunk in "
            "the history."
        ),
    )


@dataclass(kw_only=True)
class PlannerContext(BaseContext):
    """The plan-then-execute graph (``graphs/planner.py``)."""

    approve_plan: bool = field(
        default_factory=lambda: _env("approve_plan", False),
        metadata=_d(
            "Planner graph: pause after the plan is validated (an interrupt carrying the plan) "
            "so it can be approved, edited or rejected before any step runs."
        ),
    )
    max_replans: int = field(
        default_factory=lambda: _env("max_replans", 1),
        metadata=_d(
            "Planner graph: how many revised plans the model may make after a step halts the "
            "run. Finished steps are kept, never re-run. 0 disables replanning."
        ),
    )
    max_plan_attempts: int = field(
        default_factory=lambda: _env("max_plan_attempts", 3),
        metadata=_d(
            "Planner graph: model attempts to produce a valid plan (each rejected plan is sent "
            "back with all its errors) before the run ends with a planning error."
        ),
    )
    step_time_cap_s: float = field(
        default_factory=lambda: _env("step_time_cap_s", 300.0),
        metadata=_d(
            "Planner: total seconds one step may take across its retries and backoff waits; no attempt starts after it."
        ),
    )


@dataclass(kw_only=True)
class DualContext(PlannerContext):
    """The dual graph: a reasoning loop that runs the planner graph as its executor."""

    max_iterations: int = field(
        default_factory=lambda: _env("max_iterations", 8),
        metadata=_d("Dual graph: most brainstorm/execute decisions before a final answer is forced."),
    )


@dataclass(kw_only=True)
class FleetContext(AgentContext):
    """The fleet graph: a coordinator and worker agent loops."""

    max_workers: int = field(
        default_factory=lambda: _env("max_workers", 4),
        metadata=_d("Fleet graph: how many worker agents run at once."),
    )
    max_subtasks: int = field(
        default_factory=lambda: _env("max_subtasks", 6),
        metadata=_d("Fleet graph: most subtasks a goal may be split into (a longer list is sent back to the model)."),
    )


@dataclass(kw_only=True)
class Context(DualContext, FleetContext):
    """Every field of every graph: what the CLI builds and what ``Context(...)`` has
    always accepted. A graph reads only its own class's fields from it."""


#: Each graph's context class, by graph name (``graphs.BUILDERS``).
GRAPH_CONTEXTS: dict[str, type[BaseContext]] = {
    "agent": AgentContext,
    "planner": PlannerContext,
    "dual": DualContext,
    "fleet": FleetContext,
}
CONTEXT_CLASSES: tuple[type[BaseContext], ...] = (
    BaseContext,
    AgentContext,
    PlannerContext,
    DualContext,
    FleetContext,
    Context,
)


@cache
def field_types() -> dict[str, Any]:
    """Each field's annotation, for every context class (``Annotated`` extras dropped)."""
    return get_type_hints(Context)


def field_problem(name: str, value: Any) -> str | None:
    """Why ``value`` cannot be context field ``name`` (None when it can): type, bounds, rules."""
    return field_value_problem(name, field_types()[name], value)


def validate_context(ctx: BaseContext) -> list[str]:
    """Return human-readable problems with a context of any class (empty when valid). Its
    values are checked again only when one of them changed (``context_types.checked_once``: a
    context is checked when it is built and by every run it starts); the budget every time."""
    errors = checked_once(ctx, value_problems)
    if not errors and getattr(ctx, "max_cost_usd", None):  # (checked: a number; 0, no budget)
        from ..models.usage import budget_problem

        problem = budget_problem(ctx)  # max_cost_usd needs a price for the run's models
        if problem:
            errors.append(problem)
    return errors


def value_problems(ctx: BaseContext) -> list[str]:
    """The problems of a context's values alone: types, bounds, rules, the output schema."""
    errors = [p for f in fields(ctx) if (p := field_problem(f.name, getattr(ctx, f.name)))]
    output_schema = getattr(ctx, "output_schema", None)
    if not errors and output_schema is not None:
        from ..replies.structured import schema_problem

        problem = schema_problem(output_schema)
        if problem:
            errors.append(f"output_schema is not a valid JSON Schema: {problem}")
    return errors


def context_field(ctx: Any, name: str, default: Any = None) -> Any:
    """``ctx.<name>`` for a context, a mapping (SDK / Studio) or None; a missing or
    None value gives ``default``."""
    if ctx is None:
        return default
    value = ctx.get(name, default) if isinstance(ctx, Mapping) else getattr(ctx, name, default)
    return default if value is None else value


def context_flag(ctx: Any, name: str, default: bool) -> bool:
    """Boolean field ``name`` of any context shape, read strictly: a raw dict context
    (no schema coercion) holding "false" is False, never ``bool("false")``. A value
    that is not a boolean or one of true/false/1/0/yes/no/on/off is a ``ValueError``."""
    return parse_bool(context_field(ctx, name, default), name)


def context_field_names(schema: type[BaseContext] | None = None) -> list[str]:
    """The fields of ``schema`` (default: ``Context``, every field)."""
    return [f.name for f in fields(schema or Context)]


def coerce_context(value: Any, schema: type[C] | None = None) -> C:
    """A context of class ``schema`` (default ``Context``) from what a user gave: an
    instance (kept), a plain dict (SDK / Studio: unknown keys are a ``ValueError``),
    None (the defaults) or an object with matching attributes (another context class)."""
    cls: type[Any] = schema or Context
    if value is None:
        return cls()
    if isinstance(value, cls):
        return value
    if isinstance(value, dict):
        known = set(context_field_names(cls))
        unknown = [shown(k) for k in value if k not in known]
        if unknown:
            raise ValueError(f"Unknown smart-agent context field(s): {', '.join(unknown)}")
        return cls(**value)
    return cls(**{k: getattr(value, k) for k in context_field_names(cls) if hasattr(value, k)})
