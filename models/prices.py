"""Model prices for the run's cost and its budget ``max_cost_usd`` (usage.py): USD per 1M input /
output tokens, and optionally per 1M cached input tokens (``cached_input``: read from the
provider's prompt cache) and cache writes (``cache_write``: Anthropic's cache creation), keyed by
``provider:model`` and by the bare model name. A small built-in table of common models with the
providers' published prices; ``SMART_AGENT_PRICES`` (a JSON file or inline JSON, read through
settings.py) adds prices or overrides the built-in ones::

    {"openai:my-model": {"input": 1.0, "output": 1.0, "cached_input": 0.1}, "llama3.1": [0, 0]}

Cached tokens without a ``cached_input`` price cost the input price, cache writes without a
``cache_write`` price too (docs/cost.md). A malformed table is a one-line
:class:`PriceTableError` naming the variable.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Mapping
from functools import lru_cache
from pathlib import Path
from typing import Any, NamedTuple

from ..config import settings


class Price(NamedTuple):
    """USD per 1M tokens: input, output, cached input (None: the input price), cache writes
    (None: the input price)."""

    input: float
    output: float
    cached_input: float | None = None
    cache_write: float | None = None


#: Built-in prices, USD per 1M tokens (input, output, cached input, cache write), as the providers
#: publish them: OpenAI bills cached input tokens (it caches on its own, writes cost nothing
#: extra); Anthropic bills cache reads at 0.1x and 5-minute cache writes at 1.25x the input price;
#: Gemini 2.5 bills implicit cache hits at 0.1x (no write price); Mistral publishes no cache price.
#: SMART_AGENT_PRICES adds and overrides.
BUILTIN_PRICES: dict[str, Price] = {
    "openai:gpt-4o-mini": Price(0.15, 0.60, 0.075),
    "openai:gpt-4o": Price(2.50, 10.00, 1.25),
    "openai:gpt-4.1": Price(2.00, 8.00, 0.50),
    "openai:gpt-4.1-mini": Price(0.40, 1.60, 0.10),
    "openai:gpt-4.1-nano": Price(0.10, 0.40, 0.025),
    "openai:o3-mini": Price(1.10, 4.40, 0.55),
    "openai:o4-mini": Price(1.10, 4.40, 0.275),
    "anthropic:claude-sonnet-4-5": Price(3.00, 15.00, 0.30, 3.75),
    "anthropic:claude-opus-4-1": Price(15.00, 75.00, 1.50, 18.75),
    "anthropic:claude-haiku-4-5": Price(1.00, 5.00, 0.10, 1.25),
    "anthropic:claude-3-5-haiku-latest": Price(0.80, 4.00, 0.08, 1.00),
    "google_genai:gemini-2.5-pro": Price(1.25, 10.00, 0.125),
    "google_genai:gemini-2.5-flash": Price(0.30, 2.50, 0.03),
    "mistralai:mistral-large-latest": Price(2.00, 6.00),
}

HOW_TO_PRICE = (
    "add its price (USD per 1M tokens) with SMART_AGENT_PRICES, a JSON file or inline JSON such as "
    '\'{{"{spec}": {{"input": 0.5, "output": 1.5, "cached_input": 0.05}}}}\' (cached_input optional)'
)


class PriceTableError(ValueError):
    """SMART_AGENT_PRICES cannot be read; the message is one line naming it."""


#: The keys of a price object: two required, the cache prices optional.
PRICE_KEYS = ("input", "output", "cached_input", "cache_write")


def _usd(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value) and value >= 0


def _price(key: str, value: Any, source: str) -> Price:
    optional: list[Any] = [None, None]
    if isinstance(value, Mapping):
        unknown = set(value) - set(PRICE_KEYS)
        optional = [value.get("cached_input"), value.get("cache_write")]
        value = [value.get("input"), value.get("output")] if not unknown else None
    ok = (
        isinstance(value, list | tuple) and len(value) == 2 and all(_usd(v) for v in value)
        and all(v is None or _usd(v) for v in optional)
    )
    if not ok:
        raise PriceTableError(
            f"SMART_AGENT_PRICES ({source}): the price of {key!r} must be "
            '{"input": USD, "output": USD} per 1M tokens, optionally with "cached_input" and "cache_write" '
            "(numbers >= 0)"
        )
    cached, write = (None if v is None else float(v) for v in optional)
    return Price(float(value[0]), float(value[1]), cached, write)


def parse_prices(text: str, source: str = "inline JSON") -> dict[str, Price]:
    """Prices from JSON text: ``{"provider:model" or "model": {"input": x, "output": y}}``, each
    optionally with ``cached_input`` and ``cache_write``; ``[x, y]`` for input and output only."""
    from ..config.files import InputFileError, load_json

    try:
        data = load_json(text, what=f"SMART_AGENT_PRICES ({source})")
    except InputFileError as exc:
        raise PriceTableError(str(exc)) from None
    if not isinstance(data, dict):
        raise PriceTableError(f"SMART_AGENT_PRICES ({source}) must be a JSON object of model -> price")
    return {str(k).strip().lower(): _price(str(k), v, source) for k, v in data.items()}


@lru_cache(maxsize=8)
def _table(raw: str | None, stamp: int | None = None) -> dict[str, Price]:
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


def price_table() -> dict[str, Price]:
    """Built-in prices plus ``SMART_AGENT_PRICES`` (PriceTableError when it is malformed)."""
    raw = settings.prices()
    stamp = None
    if raw is not None and not raw.strip().startswith("{"):
        with contextlib.suppress(OSError):
            stamp = Path(raw.strip()).expanduser().stat().st_mtime_ns
    return _table(raw, stamp)


def price_of(spec: str | None) -> Price | None:
    """The :class:`Price` of ``provider:model`` (else of its bare name), or None."""
    if not spec or not isinstance(spec, str):
        return None
    raw = settings.prices()
    if raw is None:  # (every model reply asks: the built-in table, looked up once per model)
        return _builtin_price(spec)
    return _lookup(price_table(), spec)


def _lookup(table: dict[str, Price], spec: str) -> Price | None:
    key = spec.strip().lower()
    bare = key.split(":", 1)[1].strip() if ":" in key else key
    return table.get(key) or table.get(bare)


@lru_cache(maxsize=64)
def _builtin_price(spec: str) -> Price | None:
    return _lookup(_table(None, None), spec)  # (the entry price_table() reads with no price file)


def call_cost(
    price: Price | tuple[float, float] | None, input_tokens: int, output_tokens: int, cache_read: int = 0,
    cache_write: int = 0,
) -> float:
    """USD of a call: its ``input_tokens`` (which include the ``cache_read`` and ``cache_write``
    ones) at the input price, except the cached ones at the ``cached_input`` price and the written
    ones at the ``cache_write`` price (each, when the price has none: the input price), plus its
    output tokens. (0 without a price.)"""
    if price is None:
        return 0.0
    p = price if isinstance(price, Price) else Price(*price)
    read = max(0, min(cache_read, input_tokens))
    write = max(0, min(cache_write, input_tokens - read))
    cached = p.input if p.cached_input is None else p.cached_input
    written = p.input if p.cache_write is None else p.cache_write
    usd = (input_tokens - read - write) * p.input + read * cached + write * written + output_tokens * p.output
    return usd / 1_000_000
