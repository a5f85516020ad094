"""Run configuration: one described context schema (LangGraph ``context_schema``).

Studio renders every field with its description; the CLI maps its flags onto the
same fields; defaults fall back to environment variables of the same name with a
``SMART_AGENT_`` prefix (for example ``SMART_AGENT_MAX_TOOL_CALLS=10``).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field, fields
from typing import Annotated, Any, Literal

DEFAULT_MODEL = "openai:gpt-4o-mini"

DEFAULT_SYSTEM_PROMPT = (
    "You are smart-agent, a careful autonomous assistant. Use the tools you are given when "
    "they help; never guess a value a tool can compute or look up. When the task is done, "
    "answer directly and concisely without calling more tools."
)


def _env(name: str, default: Any) -> Any:
    """Read ``SMART_AGENT_<NAME>`` converted to the type of ``default``."""
    raw = os.environ.get(f"SMART_AGENT_{name.upper()}")
    if raw is None or raw == "":
        return default
    if isinstance(default, bool):
        return raw.strip().lower() in {"1", "true", "yes", "on"}
    if isinstance(default, int):
        return int(raw)
    if isinstance(default, float):
        return float(raw)
    return raw


def _d(description: str, **extra: Any) -> dict[str, Any]:
    return {"description": description, **extra}


@dataclass(kw_only=True)
class Context:
    """Everything a run can be configured with. All fields are optional."""

    model: Annotated[str, {"__template_metadata__": {"kind": "llm"}}] = field(
        default_factory=lambda: os.environ.get("SMART_AGENT_MODEL") or DEFAULT_MODEL,
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
            "Hard bound on tool executions per run. When reached, the next model turn is "
            "offered no tools and must answer."
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
        default_factory=lambda: _env("workspace", os.getcwd()),
        metadata=_d("Folder the file tools are confined to. Default: $SMART_AGENT_WORKSPACE or the current folder."),
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
    # --- context management (issue: summarize / archive / todo / structured output)
    # --- memory (issue: long-term memory)
    # --- reasoning mode (issue: two-phase reasoning)
    # Later features add their fields below this line.
    # --- planner (issue 6: plan, then execute)
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

    def __post_init__(self) -> None:
        errors = validate_context(self)
        if errors:
            raise ValueError("Invalid smart-agent configuration: " + "; ".join(errors))


def validate_context(ctx: Context) -> list[str]:
    """Return human-readable problems with a context (empty when valid)."""
    errors: list[str] = []
    if not isinstance(ctx.model, str) or not ctx.model.strip():
        errors.append("model must be a non-empty 'provider:model' string")
    if not isinstance(ctx.max_tool_calls, int) or ctx.max_tool_calls < 0:
        errors.append(f"max_tool_calls must be an integer >= 0 (got {ctx.max_tool_calls!r})")
    if not isinstance(ctx.max_parallel_tools, int) or ctx.max_parallel_tools < 1:
        errors.append(f"max_parallel_tools must be an integer >= 1 (got {ctx.max_parallel_tools!r})")
    if ctx.tool_timeout_s is not None and ctx.tool_timeout_s <= 0:
        errors.append(f"tool_timeout_s must be > 0 (got {ctx.tool_timeout_s!r})")
    if not isinstance(ctx.approve_plan, bool):
        errors.append(f"approve_plan must be true or false (got {ctx.approve_plan!r})")
    if not isinstance(ctx.max_replans, int) or isinstance(ctx.max_replans, bool) or ctx.max_replans < 0:
        errors.append(f"max_replans must be an integer >= 0 (got {ctx.max_replans!r})")
    if not isinstance(ctx.max_plan_attempts, int) or isinstance(ctx.max_plan_attempts, bool) or ctx.max_plan_attempts < 1:
        errors.append(f"max_plan_attempts must be an integer >= 1 (got {ctx.max_plan_attempts!r})")
    return errors


def context_field_names() -> list[str]:
    return [f.name for f in fields(Context)]


def coerce_context(value: Context | dict[str, Any] | None) -> Context:
    """Accept a Context, a plain dict (SDK / Studio) or None."""
    if value is None:
        return Context()
    if isinstance(value, Context):
        return value
    if isinstance(value, dict):
        known = set(context_field_names())
        unknown = sorted(set(value) - known)
        if unknown:
            raise ValueError(f"Unknown smart-agent context field(s): {', '.join(unknown)}")
        return Context(**value)
    # Objects with matching attributes (e.g. another dataclass)
    return Context(**{k: getattr(value, k) for k in context_field_names() if hasattr(value, k)})


ReasoningMode = Literal["direct", "two_phase"]
