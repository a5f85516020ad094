"""Run configuration: per-graph context classes (LangGraph ``context_schema``), composed of the
settings of the concerns each graph has.

Every concern declares its settings once, in its own module under ``policies/`` (a settings
class, ``config/fields.py``): name, type, default, bounds, help, environment variable, flag.
The context classes below are those settings classes put together, one line each:
``BaseContext`` holds what every graph uses; ``AgentContext``, ``PlannerContext``,
``DualContext`` (a planner inside) and ``FleetContext`` (agent workers inside) add only their
own, so Studio shows each graph only its own fields. ``Context`` has every field: the CLI builds
it and any graph accepts it. Defaults come from ``SMART_AGENT_<FIELD>`` when set (for example
``SMART_AGENT_MAX_TOOL_CALLS=10``), read each time a context is made.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields
from functools import cache
from typing import Any, Self, TypeVar, get_type_hints

from ..policies.archive import ArchiveSettings
from ..policies.context_budget import ContextBudgetSettings
from ..policies.fallback import FallbackSettings
from ..policies.loop_guard import LoopSettings
from ..policies.memory import MemorySettings
from ..policies.model import DEFAULT_MODEL, DEFAULT_SYSTEM_PROMPT, ModelSettings
from ..policies.pii import PiiSettings
from ..policies.prompt_cache import PromptCacheSettings
from ..policies.reasoning import ReasoningMode, ReasoningSettings
from ..policies.review import ReviewSettings
from ..policies.run_budget import RunBudgetSettings
from ..policies.sandbox import SandboxSettings
from ..policies.skills import SkillSettings
from ..policies.structured_output import StructuredOutputSettings
from ..policies.sub_agents import SubAgentSettings, SubAgentToolSettings
from ..policies.todo import TodoSettings
from ..policies.tool_budget import ToolBudgetSettings
from ..policies.tool_call_limits import ToolCallLimitSettings
from ..policies.tool_execution import ToolExecutionSettings
from ..policies.tool_retry import ToolRetrySettings
from ..policies.turn_limits import TurnLimitSettings
from .checks import checked_once, env_field, field_value_problem, parse_bool, shown
from .fields import Declared, Settings, declared_fields, setting

__all__ = [
    "AgentContext", "BaseContext", "CONTEXT_CLASSES", "Context", "DEFAULT_MODEL", "DEFAULT_SYSTEM_PROMPT",
    "DualContext", "FIELD_BOUNDS", "FIELD_RULES", "FleetContext", "GRAPH_CONTEXTS", "PlannerContext",
    "ReasoningMode", "coerce_context", "context_field", "context_field_names", "context_flag", "declaration",
    "field_problem", "field_types", "validate_context",
]
C = TypeVar("C", bound="BaseContext")


def env_default(name: str, default: Any) -> Any:
    """``SMART_AGENT_<NAME>`` as field ``name``'s value, else ``default``."""
    decl = declaration(name)
    return env_field(name, field_types()[name], default, decl.bounds, decl.rule)


# A context class lists its settings classes last first: a dataclass orders its fields from the
# last base to the first, and Studio shows them in that order (the model first).
@dataclass(kw_only=True)
class BaseContext(
    PiiSettings,
    SubAgentSettings,
    MemorySettings,
    ArchiveSettings,
    ContextBudgetSettings,
    RunBudgetSettings,
    ReviewSettings,
    ToolRetrySettings,
    ToolBudgetSettings,
    SandboxSettings,
    ToolExecutionSettings,
    PromptCacheSettings,
    FallbackSettings,
    ModelSettings,
):
    """What every graph is configured with. All fields are optional."""

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
class AgentContext(
    SubAgentToolSettings, SkillSettings, LoopSettings, ToolCallLimitSettings, TurnLimitSettings,
    StructuredOutputSettings, TodoSettings,
    ReasoningSettings, BaseContext,
):
    """The agent loop (``graphs/agent.py``; also fleet workers and sub-agents)."""


@dataclass(kw_only=True)
class PlannerSettings(Settings):
    """Planner"""

    approve_plan: bool = setting(
        False,
        help="Planner graph: pause after the plan is validated (an interrupt carrying the plan) so it can be "
        "approved, edited or rejected before any step runs.",
    )
    max_replans: int = setting(
        1,
        help="Planner graph: how many revised plans the model may make after a step halts the run. Finished "
        "steps are kept, never re-run. 0 disables replanning.",
        bounds=(0, 100),
        client="lower",
    )
    max_plan_attempts: int = setting(
        3,
        help="Planner graph: model attempts to produce a valid plan (each rejected plan is sent back with all "
        "its errors) before the run ends with a planning error.",
        bounds=(1, 100),
        client="lower",
    )
    step_time_cap_s: float = setting(
        300.0,
        help="Planner: total seconds one step may take across its retries and backoff waits; no attempt starts "
        "after it.",
        bounds=(0.001, 86_400.0),
        client="lower",
    )


@dataclass(kw_only=True)
class PlannerContext(PlannerSettings, BaseContext):
    """The plan-then-execute graph (``graphs/planner.py``)."""


@dataclass(kw_only=True)
class DualSettings(Settings):
    """Dual agent"""

    max_iterations: int = setting(
        8,
        help="Dual graph: most brainstorm/execute decisions before a final answer is forced.",
        bounds=(1, 1000),
        client="lower",
    )


@dataclass(kw_only=True)
class DualContext(DualSettings, PlannerContext):
    """The dual graph: a reasoning loop that runs the planner graph as its executor."""


@dataclass(kw_only=True)
class FleetSettings(Settings):
    """Fleet"""

    max_workers: int = setting(
        4, help="Fleet graph: how many worker agents run at once.", bounds=(1, 64), client="lower"
    )
    max_subtasks: int = setting(
        6,
        help="Fleet graph: most subtasks a goal may be split into (a longer list is sent back to the model).",
        bounds=(1, 100),
        client="lower",
    )


@dataclass(kw_only=True)
class FleetContext(FleetSettings, AgentContext):
    """The fleet graph: a coordinator and worker agent loops."""


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
def declarations() -> dict[str, Declared]:
    """Every field's declaration, by name."""
    return {f.name: d for f, d, _owner in declared_fields(Context)}


def declaration(name: str) -> Declared:
    """Field ``name``'s declaration (``KeyError`` for a name no context class has)."""
    return declarations()[name]


#: Inclusive (lowest, highest) value of every numeric field, and the rules of the others, from
#: their declarations (what the checks below apply).
FIELD_BOUNDS: dict[str, tuple[float, float]] = {n: d.bounds for n, d in declarations().items() if d.bounds}
FIELD_RULES = {n: d.rule for n, d in declarations().items() if d.rule}


@cache
def field_types() -> dict[str, Any]:
    """Each field's annotation, for every context class (``Annotated`` extras dropped)."""
    return get_type_hints(Context)


def field_problem(name: str, value: Any) -> str | None:
    """Why ``value`` cannot be context field ``name`` (None when it can): type, bounds, rules."""
    decl = declaration(name)
    return field_value_problem(name, field_types()[name], value, decl.bounds, decl.rule)


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
