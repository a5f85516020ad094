"""The run budget flags of ``run`` and ``chat``: ``--max-model-calls``, ``--max-tokens``,
``--max-cost`` (context fields ``max_model_calls``, ``max_tokens``, ``max_cost_usd``;
usage.py keeps the count). A bad value is one line, exit 2."""

from __future__ import annotations


def usage_report(final: dict, counted: dict) -> dict:
    """The ``usage`` of ``--json``: the run's own count (state ``usage``: model_calls,
    input_tokens, output_tokens, cost_usd - null when a model without a price was called -,
    cache_read_tokens and cache_write_tokens - the input tokens the provider read from / wrote to
    its prompt cache -, plus total_tokens), else what the events
    counted (``counted``, e.g. a run that failed before its state was read)."""
    from ..models.usage import as_usage

    if not isinstance(final.get("usage"), dict):
        return {"cost_usd": None, **counted}  # the events carry no cost: unknown
    usage = as_usage(final["usage"])
    return {**usage, "total_tokens": usage["input_tokens"] + usage["output_tokens"]}
