"""usage.py and prices.py: the usage record, the price table, the start-of-run check, the budget
decisions and the live meter; the CLI's rendering of budget events and --json usage."""

import asyncio
import json

import pytest
from langchain_core.messages import AIMessage, HumanMessage

from smart_agent.cli.budget import usage_report
from smart_agent.cli.render import format_event
from smart_agent.config.context import Context
from smart_agent.models.prices import BUILTIN_PRICES, Price, PriceTableError, call_cost, price_of, price_table
from smart_agent.models.usage import (
    OUTPUT_ALLOWANCE,
    Limits,
    Meter,
    add_usage,
    as_usage,
    budget_problem,
    budget_spent,
    budget_stop,
    current_meter,
    empty_usage,
    limits_of,
    metered,
    record_end,
    record_start,
    run_start_usage,
    shared_meter,
    using,
)


def used(calls=0, tokens_in=0, tokens_out=0, cost=0.0, read=0, write=0):
    return {"model_calls": calls, "input_tokens": tokens_in, "output_tokens": tokens_out, "cost_usd": cost,
            "cache_read_tokens": read, "cache_write_tokens": write}


def test_the_record_reads_anything_a_state_may_hold_and_adds_up():
    assert as_usage(None) == empty_usage() == used()
    bad = {"model_calls": "3", "input_tokens": -5, "output_tokens": None, "cost_usd": float("nan")}
    assert as_usage(bad) == used(3)
    assert add_usage(used(1, 10, 2, 0.5), used(2, 5, 1, 0.25)) == used(3, 15, 3, 0.75)
    # an unknown cost (null: a model without a price was called) stays unknown, never 0.0
    assert as_usage(used(1, cost=None)) == used(1, cost=None) and as_usage({"model_calls": 1}) == used(1)
    assert add_usage(used(1, 10, 2, 0.5), used(1, 5, 1, None)) == used(2, 15, 3, None)
    assert add_usage(used(1, cost=None), {"model_calls": 1}) == used(2, cost=None)


def test_a_call_of_a_model_without_a_price_makes_the_cost_unknown():
    meter = Meter(spec="openai:unpriced")
    meter.begin_call()
    meter.end_call(100, 10)
    assert meter.usage == used(1, 100, 10, None)
    priced = Meter(spec="openai:gpt-4o-mini")
    priced.begin_call()
    priced.end_call(1_000_000, 0)
    priced.begin_call()
    priced.end_call(10, 1, spec="openai:unpriced")  # a fallback model without a price
    assert priced.usage["model_calls"] == 2 and priced.usage["cost_usd"] is None
    assert budget_spent(used(5, cost=None), Limits(cost_usd=1.0)) is None  # (--max-cost needs every price)


def test_limits_of_any_context_shape():
    assert limits_of(None) == Limits() and not Limits().any()
    assert limits_of({"max_model_calls": 4}) == Limits(model_calls=4)
    ctx = Context(max_tokens=100, max_cost_usd=0.5)
    assert limits_of(ctx) == Limits(0, 100, 0.5) and limits_of(ctx).any()


def test_prices_builtin_by_spec_or_bare_name_and_extended_inline_or_by_file(monkeypatch, tmp_path):
    monkeypatch.delenv("SMART_AGENT_PRICES", raising=False)
    assert price_of("openai:gpt-4o-mini") == BUILTIN_PRICES["openai:gpt-4o-mini"]
    assert price_of("azure_openai:gpt-4o-mini") == BUILTIN_PRICES["openai:gpt-4o-mini"]  # by bare name
    assert price_of("openai:unknown-model") is None and price_of(None) is None
    monkeypatch.setenv("SMART_AGENT_PRICES", '{"my-model": {"input": 1, "output": 2}, "openai:gpt-4o": [3, 4]}')
    assert price_of("openai:my-model") == Price(1.0, 2.0) and price_of("openai:gpt-4o") == Price(3.0, 4.0)
    prices = tmp_path / "prices.json"
    prices.write_text(json.dumps({"openai:local": {"input": 0, "output": 0.5}}))
    monkeypatch.setenv("SMART_AGENT_PRICES", str(prices))
    assert price_of("openai:local") == Price(0.0, 0.5) and "openai:gpt-4o-mini" in price_table()
    assert call_cost((1.0, 2.0), 1_000_000, 500_000) == 2.0 and call_cost(None, 10, 10) == 0.0


@pytest.mark.parametrize("raw", ["{not json", "[1, 2]", '{"m": [1]}', '{"m": {"input": -1, "output": 1}}',
                                 '{"m": {"input": true, "output": 1}}', "/no/such/prices.json"])
def test_a_malformed_price_table_is_one_line_naming_the_variable(monkeypatch, raw):
    monkeypatch.setenv("SMART_AGENT_PRICES", raw)
    with pytest.raises(PriceTableError) as err:
        price_table()
    assert "SMART_AGENT_PRICES" in str(err.value) and "\n" not in str(err.value)


def test_budget_problem_needs_a_price_only_with_max_cost(monkeypatch):
    monkeypatch.delenv("SMART_AGENT_PRICES", raising=False)
    assert budget_problem({"model": "openai:unpriced", "max_cost_usd": 0}) is None
    assert budget_problem({"model": "openai:gpt-4o-mini", "max_cost_usd": 1}) is None
    problem = budget_problem({"model": "openai:gpt-4o-mini", "fallback_models": ["openai:unpriced"], "max_cost_usd": 1})
    assert "no price for model 'openai:unpriced'" in problem and "SMART_AGENT_PRICES" in problem
    with pytest.raises(ValueError, match="no price for model 'openai:unpriced'"):
        Context(model="openai:unpriced", max_cost_usd=1.0)  # the run fails at start
    monkeypatch.setenv("SMART_AGENT_PRICES", "{")
    assert "SMART_AGENT_PRICES" in budget_problem({"model": "openai:gpt-4o-mini", "max_cost_usd": 1})


def test_budget_stop_model_calls_the_next_call_is_the_last():
    limits = Limits(model_calls=4)
    assert [budget_stop(used(n), limits, 0) for n in range(5)] == [None, None, None, "model_calls", "model_calls"]
    assert budget_stop(used(100), Limits(), 10**9) is None  # no limits
    assert budget_spent(used(3), limits) is None and budget_spent(used(4), limits) == "model_calls"


def test_budget_stop_tokens_and_cost_leave_room_for_one_more_turn():
    turn = 500 + OUTPUT_ALLOWANCE
    limits = Limits(tokens=1000 + 2 * turn)
    assert budget_stop(used(1, 900, 100), limits, 500) is None  # exactly room for two turns
    assert budget_stop(used(1, 901, 100), limits, 500) == "tokens"
    assert budget_spent(used(1, 1000 + 2 * turn, 0), limits) == "tokens"
    price = (1000.0, 1000.0)  # USD per 1M: a turn costs turn / 1000
    cost_limits = Limits(cost_usd=1.0 + 2 * turn / 1000)
    assert budget_stop(used(1, cost=1.0), cost_limits, 500, price) is None
    assert budget_stop(used(1, cost=1.01), cost_limits, 500, price) == "cost"
    assert budget_stop(used(1, cost=1.01), cost_limits, 500, None) is None  # unpriced: checked at start
    assert budget_spent(used(cost=5.0), Limits(cost_usd=5.0)) == "cost"


def test_meter_counts_calls_when_sent_children_add_to_the_shared_root_and_reserve_calls():
    root = Meter(limits=Limits(model_calls=5), spec="openai:gpt-4o-mini")
    child = Meter(parent=root)
    child.begin_call()
    assert root.usage["model_calls"] == 1 and child.total()["model_calls"] == 1  # in flight counts
    child.end_call(1_000_000, 0)
    assert child.usage == used(1, 1_000_000, 0, BUILTIN_PRICES["openai:gpt-4o-mini"][0])
    assert root.usage == child.usage
    root.usage["model_calls"] = 3
    assert child.stop(0) is None
    with child.reserve():
        assert child.stop(0) == "model_calls" and child.effective_limits().model_calls == 4
    assert root.reserved_calls == 0


def test_metered_nests_and_a_nested_run_starts_from_its_callers_usage():
    assert current_meter() is None and run_start_usage() == empty_usage()
    with metered({"usage": used(2, 20, 2)}, {"max_model_calls": 9}) as outer:
        assert current_meter() is outer and outer.usage == used(2, 20, 2)
        with metered({"usage": used()}, {}) as inner:  # e.g. a planner run inside the dual graph
            assert inner is outer
        assert run_start_usage() == used(2, 20, 2)
    assert current_meter() is None


def test_record_estimates_a_call_without_reported_usage():
    meter = Meter()
    with using(meter):
        started = record_start()
        record_end(started, [HumanMessage(content="x" * 400)], AIMessage(content="y" * 40), None)
    assert meter.usage["model_calls"] == 1 and meter.usage["input_tokens"] >= 100 and meter.usage["output_tokens"] == 10
    reported = AIMessage(content="z", usage_metadata={"input_tokens": 7, "output_tokens": 3, "total_tokens": 10})
    record_end(meter, [], {"raw": reported, "parsed": None}, None)  # with_structured_output(include_raw=True)
    assert meter.usage["input_tokens"] >= 107 and meter.usage["output_tokens"] == 13
    record_end(None, [], reported, None)  # no meter: nothing to count, no error


def test_parallel_workers_of_a_round_share_one_meter():
    async def main():
        async def worker(key):
            root = shared_meter(key, used(1), {"max_model_calls": 6}, reserve_calls=1)
            await asyncio.sleep(0)
            return root

        return await asyncio.gather(worker("round-1"), worker("round-1"), worker("round-2"))

    a, b, c = asyncio.run(main())
    assert a is b and a is not c and a.usage == used(1) and a.effective_limits().model_calls == 5


def test_budget_event_lines_and_json_usage():
    line = format_event({"event": "budget", "action": "finalize", "reason": "model_calls",
                         "consumed": used(3), "limit": {"model_calls": 4, "tokens": 0, "cost_usd": 0.0}})
    assert line == "  ! budget: 3 of 4 model calls used: the next model call must answer"
    cost = format_event({"event": "budget", "action": "finalize", "reason": "cost",
                         "consumed": used(3, cost=0.5), "limit": {"model_calls": 0, "tokens": 0, "cost_usd": 1}})
    assert cost == "  ! budget: $0.5000 of $1.0000 used: the next model call must answer"
    assert format_event({"event": "budget", "action": "ok", "consumed": used(1), "limit": {}}) is None
    assert usage_report({"usage": used(2, 30, 5, 0.1)}, {}) == {**used(2, 30, 5, 0.1), "total_tokens": 35}
    counted = {"model_calls": 1, "input_tokens": 3, "output_tokens": 1, "total_tokens": 4}
    assert usage_report({}, counted) == {**counted, "cost_usd": None}  # the events carry no cost
    assert usage_report({"usage": used(1, 3, 1, None)}, {})["cost_usd"] is None


# --------------------------------------------------------------------------- prompt caching
def cached_reply(tokens_in, read=0, write=0, tokens_out=10, **details):
    return AIMessage(content="ok", usage_metadata={
        "input_tokens": tokens_in, "output_tokens": tokens_out, "total_tokens": tokens_in + tokens_out,
        "input_token_details": {"cache_read": read, "cache_creation": write, **details},
    })


def test_cached_input_tokens_are_counted_and_priced_at_the_cached_input_price(monkeypatch):
    monkeypatch.setenv("SMART_AGENT_PRICES", '{"openai:my-model": {"input": 1.0, "output": 1.0, "cached_input": 0.1}}')
    meter = Meter(spec="openai:my-model")
    for read in (0, 800_000):
        meter.begin_call()
        record_end(meter, [], cached_reply(1_000_000, read, tokens_out=0), None)
    # 1M at $1 + (200k at $1 + 800k at $0.10)
    assert meter.usage == used(2, 2_000_000, 0, 1.0 + 0.2 + 0.08, read=800_000)
    # without a cached_input price cached tokens cost the input price; a cache write its own price
    assert call_cost(Price(1.0, 2.0), 1_000_000, 0, 500_000) == 1.0
    assert call_cost(Price(1.0, 2.0, 0.1, 1.25), 1_000_000, 0, 0, 1_000_000) == 1.25
    assert call_cost((1.0, 2.0), 1_000_000, 0, 400_000, 400_000) == 1.0


def test_anthropic_cache_writes_and_a_service_tiers_cache_reads_are_counted(monkeypatch):
    monkeypatch.delenv("SMART_AGENT_PRICES", raising=False)
    meter = Meter(spec="anthropic:claude-haiku-4-5")  # $1 in, $5 out, reads $0.10, writes $1.25
    meter.begin_call()
    record_end(meter, [], cached_reply(1_000_000, 600_000, 400_000, tokens_out=0), None)
    assert meter.usage == used(1, 1_000_000, 0, 0.06 + 0.5, read=600_000, write=400_000)
    tier = cached_reply(100, 0, 0, priority_cache_read=64)  # langchain-openai on the priority tier
    meter.begin_call()
    record_end(meter, [], tier, None)
    assert meter.usage["cache_read_tokens"] == 600_064


@pytest.mark.parametrize("read, write", [(5_000, 0), (0, 5_000), (600, 600), (-5, 10**30), ("900", 7)])
def test_a_providers_cache_counts_never_exceed_its_input_tokens_nor_lower_the_cost(monkeypatch, read, write):
    monkeypatch.setenv("SMART_AGENT_PRICES", '{"openai:m": {"input": 1.0, "output": 1.0, "cached_input": 0}}')
    meter = Meter(spec="openai:m")
    meter.begin_call()
    record_end(meter, [], cached_reply(1000, read, write, tokens_out=0), None)
    u = meter.usage
    assert u["input_tokens"] == 1000 and 0 <= u["cache_read_tokens"] + u["cache_write_tokens"] <= 1000
    assert u["cost_usd"] == pytest.approx((1000 - u["cache_read_tokens"]) / 1_000_000)


def test_a_price_may_carry_cached_input_and_cache_write_prices(monkeypatch):
    price = {"m": {"input": 1, "output": 2, "cached_input": 0.1, "cache_write": 1.5}}
    monkeypatch.setenv("SMART_AGENT_PRICES", json.dumps(price))
    assert price_of("openai:m") == Price(1.0, 2.0, 0.1, 1.5)
    assert BUILTIN_PRICES["openai:gpt-4.1-mini"].cached_input == 0.10
    assert all(p.cached_input is not None for k, p in BUILTIN_PRICES.items() if not k.startswith("mistralai:"))
    for bad in ('{"m": {"input": 1, "output": 2, "cached_input": -1}}', '{"m": {"input": 1, "output": 2, "cache": 1}}'):
        monkeypatch.setenv("SMART_AGENT_PRICES", bad)
        with pytest.raises(PriceTableError, match="cached_input"):
            price_table()


def test_cached_tokens_in_json_usage_event_lines_and_the_summary_line():
    from smart_agent.cli.outcome import summary_line
    from smart_agent.cli.summary import RunSummary
    from smart_agent.models.messages import usage_of

    event = {"event": "usage", "turn": 2, **usage_of(cached_reply(5000, 4096))}
    assert event["cache_read_tokens"] == 4096 and "cache_write_tokens" not in event
    assert format_event(event) == "  · model turn 2: 5000 tokens in (4096 cached), 10 out"
    assert "cache_read_tokens" not in usage_of(cached_reply(10))  # none reported: none shown
    summary = RunSummary()
    summary.add(event)
    assert summary.usage["cache_read_tokens"] == 4096
    report = usage_report({"usage": used(1, 5000, 10, 0.001, read=4096)}, {})
    assert report["cache_read_tokens"] == 4096 and report["cache_write_tokens"] == 0
    line = summary_line("t1", summary, {"usage": used(1, 5000, 10, 0.001, read=4096, write=12)})
    assert "5010 tokens (4096 cached, 12 written to the cache) · $0.0010" in line
    assert "cached" not in summary_line("t1", RunSummary(), {"usage": used(1, 5000, 10, 0.001)})
