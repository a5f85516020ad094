"""The run budget flags of ``run`` and ``chat``: ``--max-model-calls``, ``--max-tokens``,
``--max-cost`` (context fields ``max_model_calls``, ``max_tokens``, ``max_cost_usd``;
usage.py keeps the count). A bad value is one line, exit 2."""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable

from .options import field_int, shown


def field_float(field_name: str) -> Callable[[str], float]:
    """An argparse ``type`` for a float context field: a finite number within its bounds."""
    from ..config.context import field_problem

    def parse(text: str) -> float:
        try:
            value = float(text.strip())
        except ValueError:
            raise argparse.ArgumentTypeError(f"must be a number (got {shown(text)})") from None
        problem = "must be a finite number" if not math.isfinite(value) else field_problem(field_name, value)
        if problem:
            raise argparse.ArgumentTypeError(problem)
        return value

    parse.__name__ = "number"
    return parse


def add_budget_args(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--max-model-calls", type=field_int("max_model_calls"), metavar="N",
        help="most model calls of the run; the last one answers without tools (default 0: no limit)",
    )
    p.add_argument(
        "--max-tokens", type=field_int("max_tokens"), metavar="N",
        help="most input + output tokens of the run, as the provider reports them (default 0: no limit)",
    )
    p.add_argument(
        "--max-cost", type=field_float("max_cost_usd"), metavar="USD",
        help="most spend of the run in US dollars, priced by the model's price (SMART_AGENT_PRICES adds prices)",
    )


def budget_values(args: argparse.Namespace, values: dict) -> None:
    for flag, field_name in (
        ("max_model_calls", "max_model_calls"), ("max_tokens", "max_tokens"), ("max_cost", "max_cost_usd"),
    ):
        v = getattr(args, flag, None)
        if v is not None:
            values[field_name] = v


def usage_report(final: dict, counted: dict) -> dict:
    """The ``usage`` of ``--json``: the run's own count (state ``usage``: model_calls,
    input_tokens, output_tokens, cost_usd - null when a model without a price was called -, plus
    total_tokens), else what the events
    counted (``counted``, e.g. a run that failed before its state was read)."""
    from ..models.usage import as_usage

    if not isinstance(final.get("usage"), dict):
        return {"cost_usd": None, **counted}  # the events carry no cost: unknown
    usage = as_usage(final["usage"])
    return {**usage, "total_tokens": usage["input_tokens"] + usage["output_tokens"]}
