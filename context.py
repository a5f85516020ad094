"""Run configuration: one described context schema (LangGraph ``context_schema``).

Studio renders every field with its description; the CLI maps its flags onto the
same fields; defaults fall back to environment variables of the same name with a
``SMART_AGENT_`` prefix (for example ``SMART_AGENT_MAX_TOOL_CALLS=10``).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import Annotated, Any, Literal

DEFAULT_MODEL = "openai:gpt-4o-mini"

ReasoningMode = Literal["direct", "two_phase"]

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
    # --- context management: token budget, archive, todo planning, structured output
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
    # --- long-term memory
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
        metadata=_d("How many memories are recalled into the system prompt (ranked by similarity, recency and importance)."),
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
    # --- reasoning mode
    reasoning: ReasoningMode = field(
        default_factory=lambda: _env("reasoning", "direct"),
        metadata=_d(
            "'direct': each agent turn is one model call. 'two_phase': the model first reasons "
            "with a single 'reasoning' tool (situation, plan, done), then acts with only the "
            "tools its plan names (all when it names none; none when it says done)."
        ),
    )
    # --- planner: plan, then execute
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

    # --- multi-agent: fleet, sub-agents, handoffs, dual agent
    max_workers: int = field(
        default_factory=lambda: _env("max_workers", 4),
        metadata=_d("Fleet graph: how many worker agents run at once."),
    )
    max_subtasks: int = field(
        default_factory=lambda: _env("max_subtasks", 6),
        metadata=_d("Fleet graph: most subtasks a goal may be split into (a longer list is sent back to the model)."),
    )
    max_agent_depth: int = field(
        default_factory=lambda: _env("max_agent_depth", 3),
        metadata=_d("sub_agent tool: deepest nesting of child agents; agents at this depth get no sub_agent tool."),
    )
    max_sub_agents: int = field(
        default_factory=lambda: _env("max_sub_agents", 2),
        metadata=_d("sub_agent tool: child agents running at once (per nesting level)."),
    )
    max_iterations: int = field(
        default_factory=lambda: _env("max_iterations", 8),
        metadata=_d("Dual graph: most brainstorm/execute decisions before a final answer is forced."),
    )
    max_tool_calls_per_turn: int = field(
        default_factory=lambda: _env("max_tool_calls_per_turn", 32),
        metadata=_d("Most tool calls run from one model turn; the rest are answered 'skipped' (also bounded by max_tool_calls)."),
    )
    max_tool_arg_chars: int = field(
        default_factory=lambda: _env("max_tool_arg_chars", 100_000),
        metadata=_d("Largest tool-call arguments (characters of JSON) a call may carry; larger calls are refused and shrunk in the history."),
    )
    step_time_cap_s: float = field(
        default_factory=lambda: _env("step_time_cap_s", 300.0),
        metadata=_d("Planner: total seconds one step may take across its retries and backoff waits; no attempt starts after it."),
    )
    max_write_bytes: int = field(
        default_factory=lambda: _env("max_write_bytes", 10_000_000),
        metadata=_d("Largest content (UTF-8 bytes) write_file may write; larger writes are refused before anything is written."),
    )
    model_timeout_s: float = field(
        default_factory=lambda: _env("model_timeout_s", 120.0),
        metadata=_d("Seconds one model request may wait for the service (connect, and each read of the reply) before it fails."),
    )
    model_max_retries: int = field(
        default_factory=lambda: _env("model_max_retries", 2),
        metadata=_d("Retries of a model request that timed out or could not connect (0: no retry)."),
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
    if not isinstance(ctx.model_timeout_s, (int, float)) or isinstance(ctx.model_timeout_s, bool) or not 0 < ctx.model_timeout_s <= 3600:
        errors.append(f"model_timeout_s must be > 0 and <= 3600 (got {ctx.model_timeout_s!r})")
    if not _is_int(ctx.model_max_retries) or not 0 <= ctx.model_max_retries <= 10:
        errors.append(f"model_max_retries must be an integer from 0 to 10 (got {ctx.model_max_retries!r})")
    if not isinstance(ctx.step_time_cap_s, (int, float)) or isinstance(ctx.step_time_cap_s, bool) or not ctx.step_time_cap_s > 0:
        errors.append(f"step_time_cap_s must be > 0 (got {ctx.step_time_cap_s!r})")
    if not isinstance(ctx.approve_plan, bool):
        errors.append(f"approve_plan must be true or false (got {ctx.approve_plan!r})")
    if not isinstance(ctx.max_replans, int) or isinstance(ctx.max_replans, bool) or ctx.max_replans < 0:
        errors.append(f"max_replans must be an integer >= 0 (got {ctx.max_replans!r})")
    if not isinstance(ctx.max_plan_attempts, int) or isinstance(ctx.max_plan_attempts, bool) or ctx.max_plan_attempts < 1:
        errors.append(f"max_plan_attempts must be an integer >= 1 (got {ctx.max_plan_attempts!r})")
    # context management
    errors.extend(_context_management_errors(ctx))
    errors.extend(_multi_agent_errors(ctx))
    # memory
    if not isinstance(ctx.memory, bool):
        errors.append(f"memory must be true or false (got {ctx.memory!r})")
    if not isinstance(ctx.memory_k, int) or isinstance(ctx.memory_k, bool) or not 0 <= ctx.memory_k <= 100:
        errors.append(f"memory_k must be an integer from 0 to 100 (got {ctx.memory_k!r})")
    if not isinstance(ctx.user_id, str) or not ctx.user_id.strip() or "\x00" in ctx.user_id:
        errors.append(f"user_id must be a non-empty string (got {ctx.user_id!r})")
    if not isinstance(ctx.embedding_model, str) or not (
        ctx.embedding_model.strip() == "local" or ":" in ctx.embedding_model
    ):
        errors.append(
            f"embedding_model must be 'local' or 'provider:model' (got {ctx.embedding_model!r})"
        )
    return errors


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _context_management_errors(ctx: Context) -> list[str]:
    errors: list[str] = []
    if not _is_int(ctx.context_token_limit) or ctx.context_token_limit < 1000:
        errors.append(f"context_token_limit must be an integer >= 1000 (got {ctx.context_token_limit!r})")
    if not _is_int(ctx.summary_token_limit) or ctx.summary_token_limit < 50:
        errors.append(f"summary_token_limit must be an integer >= 50 (got {ctx.summary_token_limit!r})")
    if not _is_int(ctx.archive_threshold_chars) or ctx.archive_threshold_chars < 0:
        errors.append(f"archive_threshold_chars must be an integer >= 0 (got {ctx.archive_threshold_chars!r})")
    if not isinstance(ctx.use_todo_list, bool):
        errors.append(f"use_todo_list must be true or false (got {ctx.use_todo_list!r})")
    if not _is_int(ctx.max_output_retries) or ctx.max_output_retries < 0:
        errors.append(f"max_output_retries must be an integer >= 0 (got {ctx.max_output_retries!r})")
    if ctx.output_schema is not None:
        from smart_agent.structured_output import schema_problem

        problem = schema_problem(ctx.output_schema)
        if problem:
            errors.append(f"output_schema is not a valid JSON Schema: {problem}")
    return errors


def _multi_agent_errors(ctx: Context) -> list[str]:
    bounds = {"max_workers": 1, "max_subtasks": 1, "max_agent_depth": 0, "max_sub_agents": 1, "max_iterations": 1,
              "max_tool_calls_per_turn": 1, "max_tool_arg_chars": 100, "max_write_bytes": 1}
    return [
        f"{name} must be an integer >= {low} (got {getattr(ctx, name)!r})"
        for name, low in bounds.items()
        if not _is_int(getattr(ctx, name)) or getattr(ctx, name) < low
    ] + ([] if ctx.reasoning in ("direct", "two_phase") else [
        f"reasoning must be 'direct' or 'two_phase' (got {ctx.reasoning!r})"
    ])


def context_field(ctx: Any, name: str, default: Any = None) -> Any:
    """``ctx.<name>`` for a Context, a mapping (SDK / Studio) or None; a missing or
    None value gives ``default``."""
    if ctx is None:
        return default
    value = ctx.get(name, default) if isinstance(ctx, Mapping) else getattr(ctx, name, default)
    return default if value is None else value


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


