"""Model prices for the run budget ``max_cost_usd`` (usage.py): USD per 1M input / output
tokens, keyed by ``provider:model`` and by the bare model name. A small built-in table of
common models; ``SMART_AGENT_PRICES`` (a JSON file or inline JSON, read through settings.py)
adds prices or overrides the built-in ones::

    {"openai:my-model": {"input": 0.5, "output": 1.5}, "llama3.1": [0, 0]}

A malformed table is a one-line :class:`PriceTableError` naming the variable.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Mapping
from functools import lru_cache
from pathlib import Path
from typing import Any

from ..config import settings

#: Built-in prices, USD per 1M tokens (input, output); SMART_AGENT_PRICES adds and overrides.
BUILTIN_PRICES: dict[str, tuple[float, float]] = {
    "openai:gpt-4o-mini": (0.15, 0.60),
    "openai:gpt-4o": (2.50, 10.00),
    "openai:gpt-4.1": (2.00, 8.00),
    "openai:gpt-4.1-mini": (0.40, 1.60),
    "openai:gpt-4.1-nano": (0.10, 0.40),
    "openai:o3-mini": (1.10, 4.40),
    "openai:o4-mini": (1.10, 4.40),
    "anthropic:claude-sonnet-4-5": (3.00, 15.00),
    "anthropic:claude-opus-4-1": (15.00, 75.00),
    "anthropic:claude-haiku-4-5": (1.00, 5.00),
    "anthropic:claude-3-5-haiku-latest": (0.80, 4.00),
    "google_genai:gemini-2.5-pro": (1.25, 10.00),
    "google_genai:gemini-2.5-flash": (0.30, 2.50),
    "mistralai:mistral-large-latest": (2.00, 6.00),
}

HOW_TO_PRICE = (
    "add its price (USD per 1M tokens) with SMART_AGENT_PRICES, a JSON file or inline JSON such as "
    '\'{{"{spec}": {{"input": 0.5, "output": 1.5}}}}\''
)


class PriceTableError(ValueError):
    """SMART_AGENT_PRICES cannot be read; the message is one line naming it."""


def _price_pair(key: str, value: Any, source: str) -> tuple[float, float]:
    if isinstance(value, Mapping):
        value = [value.get("input"), value.get("output")]
    ok = (
        isinstance(value, list | tuple) and len(value) == 2
        and all(isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v) and v >= 0 for v in value)
    )
    if not ok:
        raise PriceTableError(
            f"SMART_AGENT_PRICES ({source}): the price of {key!r} must be "
            '{"input": USD, "output": USD} per 1M tokens (numbers >= 0)'
        )
    return float(value[0]), float(value[1])


def parse_prices(text: str, source: str = "inline JSON") -> dict[str, tuple[float, float]]:
    """Prices from JSON text: ``{"provider:model" or "model": {"input": x, "output": y}}``."""
    from ..config.files import InputFileError, load_json

    try:
        data = load_json(text, what=f"SMART_AGENT_PRICES ({source})")
    except InputFileError as exc:
        raise PriceTableError(str(exc)) from None
    if not isinstance(data, dict):
        raise PriceTableError(f"SMART_AGENT_PRICES ({source}) must be a JSON object of model -> price")
    return {str(k).strip().lower(): _price_pair(str(k), v, source) for k, v in data.items()}


@lru_cache(maxsize=8)
def _table(raw: str | None, stamp: int | None = None) -> dict[str, tuple[float, float]]:
    """(``stamp``: the price file's modification time, so an edited file is read again.)"""
    # Built-in prices are found by the bare model name too (the same model behind another provider key).
    table = {**{k.split(":", 1)[1]: v for k, v in BUILTIN_PRICES.items()}, **BUILTIN_PRICES}
    if raw is None:
        return table
    text = raw.strip()
    if text.startswith("{"):
        table.update(parse_prices(text))
        return table
    from ..config.files import InputFileError, read_text_file

    try:
        content = read_text_file(Path(text).expanduser(), what="SMART_AGENT_PRICES: the price file")
    except InputFileError as exc:
        raise PriceTableError(str(exc)) from None
    table.update(parse_prices(content, f"file {text!r}"))
    return table


def price_table() -> dict[str, tuple[float, float]]:
    """Built-in prices plus ``SMART_AGENT_PRICES`` (PriceTableError when it is malformed)."""
    raw = settings.prices()
    stamp = None
    if raw is not None and not raw.strip().startswith("{"):
        with contextlib.suppress(OSError):
            stamp = Path(raw.strip()).expanduser().stat().st_mtime_ns
    return _table(raw, stamp)


def price_of(spec: str | None) -> tuple[float, float] | None:
    """USD per 1M (input, output) tokens of ``provider:model`` (else its bare name), or None."""
    if not spec or not isinstance(spec, str):
        return None
    raw = settings.prices()
    if raw is None:  # (every model reply asks: the built-in table, looked up once per model)
        return _builtin_price(spec)
    return _lookup(price_table(), spec)


def _lookup(table: dict[str, tuple[float, float]], spec: str) -> tuple[float, float] | None:
    key = spec.strip().lower()
    bare = key.split(":", 1)[1].strip() if ":" in key else key
    return table.get(key) or table.get(bare)


@lru_cache(maxsize=64)
def _builtin_price(spec: str) -> tuple[float, float] | None:
    return _lookup(_table(None, None), spec)  # (the entry price_table() reads with no price file)


def call_cost(price: tuple[float, float] | None, input_tokens: int, output_tokens: int) -> float:
    if price is None:
        return 0.0
    return (input_tokens * price[0] + output_tokens * price[1]) / 1_000_000
