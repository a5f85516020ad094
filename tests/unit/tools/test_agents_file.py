"""The agents file (tools/agents_file.py): the shape of the issue loads, globs select tools, the
published JSON Schema matches the keys the loader accepts, and every problem is one line naming
the file, the agent and the field. The handoff route never fires for a single agent."""

from __future__ import annotations

import json

import jsonschema
import pytest
from conftest import REPO, TRIAGE_MATH_TEAM
from langchain_core.messages import AIMessage

from smart_agent.nodes.routes import route_after_tools
from smart_agent.tools.agents_file import OWN_KEYS, TOP_KEYS, AgentsFileError, agent_setting_names, load_agents_file

pytestmark = pytest.mark.unit

TEAM = TRIAGE_MATH_TEAM
SCHEMA = json.loads((REPO / "docs" / "agents.schema.json").read_text())


def write(tmp_path, text, name="agents.yaml"):
    path = tmp_path / name
    path.write_text(text)
    return path


def problem(tmp_path, text, name="agents.yaml", **kw):
    path = write(tmp_path, text, name)
    with pytest.raises(AgentsFileError) as info:
        load_agents_file(path, **kw)
    message = str(info.value)
    assert "\n" not in message and message.startswith(f"{path}: ")
    return message


def test_the_issue_shape_loads(tmp_path):
    config = load_agents_file(write(tmp_path, TEAM))
    assert config.default == "triage" and list(config.agents) == ["triage", "math"]
    assert config.agents["triage"].handoffs == ("math",) and config.agents["triage"].tools == ()
    assert config.agents["math"].tools == ("calculator",) and config.agents["math"].prompt == "You are the math agent."


def test_json_file_settings_globs_and_default_first(tmp_path):
    data = {"agents": {
        "reader": {"description": "Reads.", "prompt": "p", "tools": ["read_*"], "model": "openai:x",
                   "max_tool_calls": 4, "reasoning": "two_phase", "sub_agents": ["math"]},
        "math": {"description": "Math.", "prompt": "q", "tools": ["calculator"]},
    }}
    config = load_agents_file(write(tmp_path, json.dumps(data), "agents.json"))
    reader = config.agents["reader"]
    assert config.default == "reader" and reader.sub_agents == ("math",)
    assert reader.settings == {"model": "openai:x", "max_tool_calls": 4, "reasoning": "two_phase"}
    assert reader.tools == ("read_*",)


def test_schema_accepts_the_example_and_lists_the_loader_keys(tmp_path):
    import yaml

    jsonschema.validate(yaml.safe_load(TEAM), SCHEMA)
    assert set(SCHEMA["properties"]) == set(TOP_KEYS)
    agent = SCHEMA["$defs"]["agent"]["properties"]
    assert set(agent) == set(OWN_KEYS) | set(agent_setting_names())
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"agents": {"a": {"description": "d", "prompt": "p", "colour": "red"}}}, SCHEMA)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (TEAM.replace("[calculator]", "[calculater]"), "agent 'math': tools: unknown tool 'calculater'"),
        (TEAM.replace("[calculator]", "[nothing_*]"), "agent 'math': tools: 'nothing_*' matches no tool"),
        (TEAM.replace("handoffs: [math]", "handoffs: [maths]"), "agent 'triage': handoffs: unknown agent 'maths'"),
        (TEAM.replace("handoffs: [math]", "sub_agents: [math]") + "    sub_agents: [triage]\n",
         "agent 'triage': sub_agents: a cycle (triage -> math -> triage)"),
        (TEAM.replace("    tools: []\n", "    tools: [\n"), "line 8: not valid YAML ("),
        (TEAM.replace("default: triage", "default: nobody"), "default: 'nobody' is not one of the agents"),
        (TEAM.replace("    tools: []\n", "    colour: red\n"), "agent 'triage': colour: unknown field"),
        (TEAM.replace("    tools: []\n", "    max_tool_calls: -3\n"), "agent 'triage': max_tool_calls:"),
        (TEAM.replace("    prompt: You are the math agent.\n", ""), "agent 'math': prompt: expected a non-empty text"),
        ("agents: []\n", "agents: expected a mapping of one or more agents"),
    ],
)
def test_problems_are_one_line_naming_file_agent_and_field(tmp_path, text, expected):
    assert expected in problem(tmp_path, text)


def test_a_chain_deeper_than_the_limit_is_refused(tmp_path):
    chain = "agents:\n" + "".join(
        f"  a{i}:\n    description: d\n    prompt: p\n    sub_agents: [a{i + 1}]\n" for i in range(3)
    ) + "  a3:\n    description: d\n    prompt: p\n"
    assert load_agents_file(write(tmp_path, chain), max_depth=3).agents["a0"].sub_agents == ("a1",)
    assert "a0 -> a1 -> a2 -> a3 is deeper than max_agent_depth 2" in problem(tmp_path, chain, max_depth=2)


def test_a_sub_agent_may_not_shadow_a_tool(tmp_path):
    text = "agents:\n  a:\n    description: d\n    prompt: p\n    sub_agents: [calculator]\n" \
           "  calculator:\n    description: d\n    prompt: p\n"
    assert "sub_agents: 'calculator' is also a tool's name" in problem(tmp_path, text)


def test_mcp_names_are_accepted_through_also(tmp_path):
    text = TEAM.replace("[calculator]", "[fs__read]")
    config = load_agents_file(write(tmp_path, text), also=lambda n: n.startswith("fs__"))
    assert config.agents["math"].tools == ("fs__read",)


def test_single_agent_never_routes_to_handoff():
    call = AIMessage("", tool_calls=[{"name": "transfer_to_math", "args": {}, "id": "c1"}])
    state = {"messages": [call], "tool_calls_made": 1}
    assert route_after_tools(state) != "handoff"
    assert route_after_tools({**state, "active_agent": "triage"}) == "handoff"


def test_the_files_own_mcp_servers_name_tools(tmp_path):
    servers = "mcp_servers:\n  fs:\n    command: python\n"
    config = load_agents_file(write(tmp_path, servers + TEAM.replace("[calculator]", "[fs__read, 'fs__*']")))
    assert [s.name for s in config.mcp_servers] == ["fs"] and config.agents["math"].tools == ("fs__read", "fs__*")
    assert "agent 'math': tools: unknown tool 'web__get'" in problem(tmp_path, servers + TEAM.replace(
        "[calculator]", "[web__get]"))
    assert "mcp_servers.fs: give exactly one of" in problem(tmp_path, servers + "    url: http://x\n" + TEAM)


def test_the_agents_file_schema_is_not_stale():
    from smart_agent.tools.agents_file import agents_schema

    assert agents_schema() == SCHEMA, (
        "docs/agents.schema.json is stale: run `python -m smart_agent.tools.agents_file > docs/agents.schema.json`"
    )
