"""Prompt caching and stateful calls (``models/prompt_cache.py``; docs/cost.md): the cache hints
every request of a thread carries, and the OpenAI Responses API with ``previous_response_id``."""

from __future__ import annotations

from dataclasses import dataclass

from ..config.fields import Settings, setting


@dataclass(kw_only=True)
class PromptCacheSettings(Settings):
    """Prompt caching"""

    responses_api: bool = setting(
        False,
        help="OpenAI models ('openai:...') use the Responses API. A request whose conversation continues the "
        "one of an earlier response of the run (the two-phase action call, the next loop turn) is sent as that "
        "response's previous_response_id and only the new messages; after a compaction or any other change "
        "the whole conversation is sent.",
    )
    prompt_cache: bool = setting(
        True,
        help="Cache hints: every OpenAI request of a thread carries a prompt_cache_key derived from the thread "
        "(a hash: the thread id is not sent); Anthropic requests mark the system prompt, the last compaction "
        "summary and the conversation's end as cache breakpoints. Off: requests carry neither.",
    )


__all__ = ["PromptCacheSettings"]
