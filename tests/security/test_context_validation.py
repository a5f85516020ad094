"""Attack: run configuration of the wrong type or out of bounds, through every way a
context is built (``Context(...)``, a dict as the SDK sends it, environment
variables) and every way a boolean is read from a raw context. Each bad value is a
clear error naming the field or the variable - never a silent truthy value."""

from __future__ import annotations

import math
import types
import typing
from dataclasses import fields
from types import SimpleNamespace

import pytest

from smart_agent.config.checks import value_problem
from smart_agent.config.context import (
    FIELD_BOUNDS,
    Context,
    coerce_context,
    context_flag,
    field_problem,
    field_types,
    validate_context,
)
from smart_agent.memory.service import memory_enabled
from smart_agent.tools.guards import ToolError, allow_private_network_of

pytestmark = pytest.mark.unit


def _base(hint):
    """``X`` for ``X | None``."""
    args = [a for a in typing.get_args(hint) if a is not type(None)]
    return args[0] if typing.get_origin(hint) in (typing.Union, types.UnionType) and len(args) == 1 else hint


def names_of(kind) -> list[str]:
    return [f.name for f in fields(Context) if _base(field_types()[f.name]) is kind]


BOOL_FIELDS, INT_FIELDS, FLOAT_FIELDS, STR_FIELDS = (names_of(k) for k in (bool, int, float, str))


# -- every field is covered -----------------------------------------------------------
def test_every_field_has_a_known_type_and_numeric_fields_have_bounds():
    # A field added later with a type the validator does not know, or a number without
    # bounds, fails here (and Context() refuses to build): no field goes unchecked.
    ctx = Context()
    for f in fields(Context):
        assert field_problem(f.name, getattr(ctx, f.name)) is None, f.name
        assert field_problem(f.name, object()) is not None, f"{f.name} accepts any object"
        assert field_problem(f.name, object()).startswith(f.name)
    assert set(INT_FIELDS + FLOAT_FIELDS) == set(FIELD_BOUNDS), "FIELD_BOUNDS must list exactly the numeric fields"
    assert BOOL_FIELDS and INT_FIELDS and FLOAT_FIELDS and STR_FIELDS
    assert (
        "allow_private_network" in BOOL_FIELDS and "max_tool_calls" in INT_FIELDS and "tool_timeout_s" in FLOAT_FIELDS
    )


def test_an_unknown_annotation_or_a_missing_bound_is_reported_not_accepted():
    assert "does not know" in value_problem("x", set[int], {1}, {})
    assert "no bounds" in value_problem("x", int, 5, {})


# -- booleans ---------------------------------------------------------------------
@pytest.mark.parametrize("name", BOOL_FIELDS)
@pytest.mark.parametrize("value", ["false", "true", "no", "0", "", 0, 1, None, [], "False"])
def test_bool_fields_accept_only_real_booleans(name, value):
    with pytest.raises(ValueError, match=f"{name} must be true or false"):
        Context(**{name: value})


@pytest.mark.parametrize("name", BOOL_FIELDS)
def test_bool_fields_keep_real_booleans(name):
    assert getattr(Context(**{name: True}), name) is True
    assert getattr(Context(**{name: False}), name) is False


def test_a_dict_context_as_the_sdk_sends_it_is_checked():
    with pytest.raises(ValueError, match="allow_private_network must be true or false"):
        coerce_context({"allow_private_network": "false"})
    with pytest.raises(ValueError, match="max_tool_calls must be an integer"):
        coerce_context({"max_tool_calls": True})
    with pytest.raises(ValueError, match="Unknown smart-agent context field"):
        coerce_context({"allow_private_networks": False, 3: "x"})


# -- integers -----------------------------------------------------------------------
@pytest.mark.parametrize("name", INT_FIELDS)
def test_int_fields_refuse_bools_floats_text_and_values_out_of_bounds(name):
    low, high = FIELD_BOUNDS[name]
    for bad in (True, False, float(low), "5", None, low - 1, high + 1, 10**30):
        problem = field_problem(name, bad)
        assert problem and problem.startswith(name), (name, bad)
        with pytest.raises(ValueError, match=name):
            Context(**{name: bad})
    assert getattr(Context(**{name: low}), name) == low and getattr(Context(**{name: high}), name) == high


# -- floats ---------------------------------------------------------------------------
@pytest.mark.parametrize("name", FLOAT_FIELDS)
def test_float_fields_refuse_nan_inf_bools_and_values_out_of_bounds(name):
    low, high = FIELD_BOUNDS[name]
    zero = []  # a budget's 0 means no limit (max_cost_usd); a timeout of 0 is refused
    if name != "max_cost_usd":
        assert low > 0, "a timeout of 0 or less would end every call at once"
        zero = [0]
    for bad in (math.nan, math.inf, -math.inf, True, "1.5", None, *zero, -1.0, high * 2):
        problem = field_problem(name, bad)
        assert problem and problem.startswith(name), (name, bad)
    assert getattr(Context(**{name: 2}), name) == 2 and getattr(Context(**{name: high}), name) == high


# -- text, lists, literals, objects -------------------------------------------------------
@pytest.mark.parametrize("name", STR_FIELDS)
@pytest.mark.parametrize("bad", ["a\x00b", "caf\udce9", 7, b"bytes"])
def test_text_fields_refuse_nul_lone_surrogates_and_non_text(name, bad):
    with pytest.raises(ValueError, match=name):
        Context(**{name: bad})


def test_list_fields_hold_strings():
    assert Context(tools=["calculator"]).tools == ["calculator"] and Context(tools=None).tools is None
    for bad in ("calculator", [1], [None], ["calc\x00"], ["\udcff"], ("calculator",)):
        with pytest.raises(ValueError, match="tools"):
            Context(tools=bad)


def test_a_context_changed_after_it_was_checked_is_checked_again():
    """validate_context remembers a checked context's values (a run checks its context again):
    any change - a field set, a list changed in place, an equal value of another type - is seen."""
    ctx = Context(memory=False, fallback_models=["openai:gpt-4o"])
    assert validate_context(ctx) == [] and validate_context(ctx) == []
    for name, bad, good in (
        ("max_tool_calls", True, 5),  # True == 1: compared by identity, never by ==
        ("max_tool_calls", 1.0, 1),
        ("memory", 1, False),
        ("tool_timeout_s", math.nan, 30.0),
        ("system_prompt", "x\x00", "Be brief."),
        ("output_schema", [], None),
    ):
        setattr(ctx, name, bad)
        assert any(e.startswith(name) for e in validate_context(ctx)), name
        setattr(ctx, name, good)
        assert validate_context(ctx) == [], name
    ctx.fallback_models.append("no-provider")  # in place: the same list object
    assert any("fallback_models" in e for e in validate_context(ctx))
    ctx.fallback_models[1] = "anthropic:claude-sonnet-4-5"
    assert validate_context(ctx) == []
    ctx.tools = ["calculator"]
    ctx.tools[0] = "calc\x00"
    assert any("tools" in e for e in validate_context(ctx))
    ctx.tools = [["calculator"]]  # (a list inside: not kept, checked every time)
    assert any("tools" in e for e in validate_context(ctx))
    ctx.tools = None
    ctx.output_schema = {"type": "object"}
    assert validate_context(ctx) == []
    ctx.output_schema["type"] = 5  # a dict changed in place: a context holding one is checked every time
    assert any("output_schema" in e for e in validate_context(ctx))
    ctx.output_schema = None
    ctx.max_cost_usd = 1.0  # the budget is checked every time: no price for this model
    ctx.model = "nowhere:unpriced-model"
    assert any("max_cost_usd" in e for e in validate_context(ctx))


def test_literal_fields_hold_one_of_their_values():
    assert Context(reasoning="two_phase").reasoning == "two_phase"
    for bad in ("two-phase", "Direct", "", 1, None):
        with pytest.raises(ValueError, match="reasoning must be one of 'direct', 'two_phase'"):
            Context(reasoning=bad)


def test_object_fields_hold_json_objects():
    for bad in ([], "{}", {1: "x"}):
        with pytest.raises(ValueError, match="output_schema"):
            Context(output_schema=bad)
    assert validate_context(Context(output_schema={"type": "object"})) == []


# -- environment variables -------------------------------------------------------------
@pytest.mark.parametrize(
    ("variable", "raw", "message"),
    [
        ("SMART_AGENT_TOOL_TIMEOUT_S", "nan", "SMART_AGENT_TOOL_TIMEOUT_S must be a finite number"),
        ("SMART_AGENT_TOOL_TIMEOUT_S", "inf", "SMART_AGENT_TOOL_TIMEOUT_S must be a finite number"),
        ("SMART_AGENT_TOOL_TIMEOUT_S", "-3", "SMART_AGENT_TOOL_TIMEOUT_S: tool_timeout_s must be a number from"),
        (
            "SMART_AGENT_MAX_TOOL_CALLS",
            "1" + "0" * 30,
            "SMART_AGENT_MAX_TOOL_CALLS: max_tool_calls must be an integer from 0 to 10000",
        ),
        ("SMART_AGENT_MAX_TOOL_CALLS", "1e3", "SMART_AGENT_MAX_TOOL_CALLS must be an integer"),
        ("SMART_AGENT_ALLOW_PRIVATE_NETWORK", "maybe", "SMART_AGENT_ALLOW_PRIVATE_NETWORK must be true or false"),
        ("SMART_AGENT_MEMORY", "2", "SMART_AGENT_MEMORY must be true or false"),
        ("SMART_AGENT_REASONING", "fast", "SMART_AGENT_REASONING: reasoning must be one of"),
        ("SMART_AGENT_USER_ID", "a\x01\udcff", "SMART_AGENT_USER_ID: user_id is not valid UTF-8"),
        ("SMART_AGENT_MODEL", " ", "SMART_AGENT_MODEL: model must be a non-empty"),
    ],
)
def test_bad_environment_values_are_errors_naming_the_variable(monkeypatch, variable, raw, message):
    monkeypatch.setenv(variable, raw)  # "\udcff": how an undecodable byte in the environment reaches os.environ
    with pytest.raises(ValueError, match=message.replace("(", r"\(")):
        Context()


@pytest.mark.parametrize("name", BOOL_FIELDS)
def test_environment_booleans_are_parsed_strictly(monkeypatch, name):
    variable = f"SMART_AGENT_{name.upper()}"
    for raw, expected in (
        ("false", False),
        ("OFF", False),
        ("0", False),
        ("No", False),
        ("true", True),
        (" on ", True),
        ("YES", True),
        ("1", True),
    ):
        monkeypatch.setenv(variable, raw)
        assert getattr(Context(), name) is expected, (variable, raw)
    monkeypatch.setenv(variable, "nope")
    with pytest.raises(ValueError, match=f"{variable} must be true or false"):
        Context()


# -- booleans read from a raw context (no schema coercion) --------------------------------
@pytest.mark.parametrize("raw", ["false", "False", "no", "0", "off", False])
def test_a_raw_dict_context_with_false_text_never_allows_private_addresses(raw):
    runtime = SimpleNamespace(context={"allow_private_network": raw})
    assert allow_private_network_of(runtime) is False
    assert context_flag(runtime.context, "allow_private_network", False) is False


@pytest.mark.parametrize("raw", ["maybe", 2, [], {"x": 1}, "tru"])
def test_a_raw_dict_context_with_a_non_boolean_refuses_the_url(raw):
    with pytest.raises(ToolError, match="allow_private_network must be true or false"):
        allow_private_network_of(SimpleNamespace(context={"allow_private_network": raw}))


def test_memory_switch_is_read_strictly_from_a_raw_context(monkeypatch):
    monkeypatch.delenv("SMART_AGENT_MEMORY", raising=False)
    assert memory_enabled({"memory": "false"}) is False
    assert memory_enabled({}) is True
    with pytest.raises(ValueError, match="memory must be true or false"):
        memory_enabled({"memory": "sometimes"})
    monkeypatch.setenv("SMART_AGENT_MEMORY", "sometimes")
    with pytest.raises(ValueError, match="SMART_AGENT_MEMORY must be true or false"):
        memory_enabled({})


# -- every graph's context class ----------------------------------------------------------
def test_every_context_class_is_validated_on_every_field_and_keeps_only_its_own_fields():
    from smart_agent.config.context import CONTEXT_CLASSES, GRAPH_CONTEXTS, AgentContext, BaseContext, PlannerContext

    union = {f.name for f in fields(Context)}
    for cls in CONTEXT_CLASSES:
        ctx = cls()
        assert validate_context(ctx) == [], cls.__name__
        for f in fields(cls):
            assert f.name in union and f.metadata.get("description"), (cls.__name__, f.name)
            assert field_problem(f.name, object()) is not None, (cls.__name__, f.name)
            with pytest.raises(ValueError, match=f.name):
                cls(**{f.name: object()})
        assert {f.name for f in fields(BaseContext)} <= {f.name for f in fields(cls)}
    assert union == set().union(*({f.name for f in fields(c)} for c in GRAPH_CONTEXTS.values()))
    agent, planner = {f.name for f in fields(AgentContext)}, {f.name for f in fields(PlannerContext)}
    assert "approve_plan" in planner and "approve_plan" not in agent
    assert "output_schema" in agent and "output_schema" not in planner
    assert "max_workers" not in agent | planner and "max_iterations" not in agent | planner
    # A dict naming another graph's field is refused for this graph, accepted by Context.
    with pytest.raises(ValueError, match="approve_plan"):
        coerce_context({"approve_plan": True}, AgentContext)
    assert coerce_context({"approve_plan": True}).approve_plan is True
    # The union Context is every class, so the CLI's context suits any graph as it is.
    assert all(isinstance(Context(), cls) for cls in CONTEXT_CLASSES)
    assert AgentContext.of(SimpleNamespace(context=None)) == AgentContext()
