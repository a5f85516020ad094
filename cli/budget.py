"""The run budget flags of ``run`` and ``chat``: ``--max-model-calls``, ``--max-tokens``,
``--max-cost`` (context fields ``max_model_calls``, ``max_tokens``, ``max_cost_usd``;
usage.py keeps the count). A bad value is one line, exit 2."""

from __future__ import annotations


def with_total_tokens(usage: dict) -> dict:
    """A usage record with its ``total_tokens`` (input + output)."""
    return {**usage, "total_tokens": int(usage.get("input_tokens") or 0) + int(usage.get("output_tokens") or 0)}


def usage_line(usage: dict) -> str:
    """``N model calls · T tokens (C cached) · $X`` of a usage record."""
    cost = usage.get("cost_usd")
    cached = int(usage.get("cache_read_tokens") or 0)
    tokens = f"{int(usage.get('total_tokens') or 0):,} tokens" + (f" ({cached:,} cached)" if cached else "")
    shown = "cost unknown" if cost is None else f"${cost:.4f}"
    return f"{int(usage.get('model_calls') or 0)} model calls · {tokens} · {shown}"


def usage_report(final: dict, counted: dict) -> dict:
    """The ``usage`` of ``--json``: the run's own count (state ``usage``: model_calls,
    input_tokens, output_tokens, cost_usd - null when a model without a price was called -,
    cache_read_tokens and cache_write_tokens - the input tokens the provider read from / wrote to
    its prompt cache -, plus total_tokens), else what the events
    counted (``counted``, e.g. a run that failed before its state was read)."""
    from ..models.usage import as_usage

    if not isinstance(final.get("usage"), dict):
        return {"cost_usd": None, **counted}  # the events carry no cost: unknown
    return with_total_tokens(as_usage(final["usage"]))
