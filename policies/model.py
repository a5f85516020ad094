"""The chat model of a run: which one, its system prompt, and how long and how often a
request may be tried. (Fallback models: ``fallback.py``; the run's budgets: ``run_budget.py``.)"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated

from ..config.fields import Settings, setting

DEFAULT_MODEL = "openai:gpt-4o-mini"

DEFAULT_SYSTEM_PROMPT = (
    "You are smart-agent, a careful autonomous assistant. Use the tools you are given when "
    "they help; never guess a value a tool can compute or look up. When the task is done, "
    "answer directly and concisely without calling more tools."
)


@dataclass(kw_only=True)
class ModelSettings(Settings):
    """Model"""

    model: Annotated[str, {"__template_metadata__": {"kind": "llm"}}] = setting(
        DEFAULT_MODEL,
        help="Chat model as 'provider:model' (init_chat_model), e.g. 'openai:gpt-4o-mini', "
        "'anthropic:claude-sonnet-4-5', 'ollama:llama3.1'. OPENAI_BASE_URL selects any OpenAI-compatible "
        "server.",
        rule=(lambda v: bool(v.strip()), "a non-empty 'provider:model' string"),
        metavar="SPEC",
    )
    system_prompt: str = setting(DEFAULT_SYSTEM_PROMPT, help="System prompt of the agent.", metavar="TEXT")
    model_timeout_s: float = setting(
        120.0,
        help="Seconds one model request may wait for the service (connect, and each read of the reply) "
        "before it fails.",
        bounds=(0.001, 3600.0),
        client="lower",
    )
    model_max_retries: int = setting(
        2,
        help="Retries of a model request that failed (timed out, could not connect, HTTP 408/409/429/5xx; "
        "0: no retry). With an OpenAI-compatible model each retry is a model call of max_model_calls.",
        bounds=(0, 10),
        flag="--model-retries",
        client="lower",
    )


__all__ = ["DEFAULT_MODEL", "DEFAULT_SYSTEM_PROMPT", "ModelSettings"]
