"""The agents file (``agents.yaml`` or ``.json``): named agents, who hands off to whom, who
calls whom as a tool. Its JSON Schema is ``docs/agents.schema.json``, described in
``docs/agents.md``::

    default: triage
    agents:
      triage:
        description: Routes each question to the right specialist.
        prompt: You are the triage agent.
        tools: []
        handoffs: [math]
      math:
        description: Does arithmetic.
        prompt: You are the math agent.
        tools: [calculator]

An agent has ``description``, ``prompt``, ``tools`` (tool names, globs allowed), optional
``model``, ``handoffs`` (agents it may transfer the thread to), ``sub_agents`` (agents it may
call as tools named after them) and any agent run setting (``max_tool_calls``,
``reasoning``, ``memory``, ``skills`` - folders, relative to the file's own -, ...). Every problem is
one ``AgentsFileError`` line naming the file, the agent and the field.
"""

from __future__ import annotations

import fnmatch
import json
import os
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from ..config.checks import model_spec_valid, shown
from .mcp_config import McpServer, parse_mcp_servers

__all__ = ["AgentDef", "AgentsConfig", "AgentsFileError", "agent_setting_names", "load_agents_file", "match_tools"]

NAME_RE = re.compile(r"^[A-Za-z][A-Za-z0-9_-]{0,39}$")
TOP_KEYS = ("$schema", "default", "agents", "mcp_servers")
OWN_KEYS = ("description", "prompt", "tools", "model", "handoffs", "sub_agents", "middleware")
# Context fields an agent may not set: its prompt and tools have keys of their own.
NOT_SETTINGS = {"system_prompt", "tools", "model"}
GLOB_CHARS = set("*?[")


class AgentsFileError(ValueError):
    """An agents file that cannot be used (one line: file, agent, field, why)."""


@dataclass(frozen=True)
class AgentDef:
    """One agent of the file (tool patterns as written; ``handoffs``/``sub_agents`` checked)."""

    name: str
    description: str
    prompt: str
    tools: tuple[str, ...] = ()
    handoffs: tuple[str, ...] = ()
    sub_agents: tuple[str, ...] = ()
    settings: dict[str, Any] = field(default_factory=dict)  # context fields (model included)
    middleware: tuple[Any, ...] = ()  # LangChain AgentMiddleware of the agent's turns (its ``middleware:``)


@dataclass(frozen=True)
class AgentsConfig:
    path: str
    default: str
    agents: dict[str, AgentDef]
    mcp_servers: tuple[McpServer, ...] = ()  # the file's own MCP servers (opened by the CLI for a run)


def agent_setting_names() -> list[str]:
    """The run settings an agent may set: the agent loop's context fields but its prompt and tools."""
    from ..config.context import AgentContext

    return [f.name for f in fields(AgentContext) if f.name not in NOT_SETTINGS]


def match_tools(patterns: Iterable[str], names: Iterable[str]) -> tuple[list[str], str | None]:
    """The names ``patterns`` select, in pattern order, and the first pattern that selects none
    (e.g. an MCP tool of a server that is not open)."""
    names = list(names)
    out: list[str] = []
    missing: str | None = None
    for pattern in patterns:
        found = fnmatch.filter(names, pattern) if GLOB_CHARS & set(pattern) else [n for n in names if n == pattern]
        if not found and missing is None:
            missing = pattern
        out.extend(n for n in found if n not in out)
    return out, missing


def load_agents_file(
    path: str | Path,
    *,
    tool_names: Iterable[str] | None = None,
    also: Callable[[str], bool] | None = None,
    max_depth: int | None = None,
) -> AgentsConfig:
    """Read and check an agents file. ``tool_names``: the tools agents may name (default: the
    built-in, plugin and context tools); ``also`` accepts other exact names (MCP tools).
    ``max_depth``: the deepest sub-agent chain allowed (default: the ``max_agent_depth`` setting)."""
    where = str(path)
    data = _read(Path(path), where)
    if not isinstance(data, Mapping):
        raise AgentsFileError(f"{where}: expected a mapping with 'agents' (and 'default')")
    unknown = [str(k) for k in data if k not in TOP_KEYS]
    if unknown:
        raise AgentsFileError(f"{where}: {unknown[0]}: unknown key (known: {', '.join(TOP_KEYS)})")
    agents_data = data.get("agents")
    if not isinstance(agents_data, Mapping) or not agents_data:
        raise AgentsFileError(f"{where}: agents: expected a mapping of one or more agents {{name: {{...}}}}")
    if tool_names is None:
        from .builtins import default_registry
        from .context_tools import with_context_tools

        tool_names = with_context_tools(default_registry()).names()
    known_tools = list(tool_names)
    servers: tuple[McpServer, ...] = ()
    if data.get("mcp_servers") is not None:  # the common {"mcpServers"} format, checked the same way
        if not isinstance(data["mcp_servers"], Mapping):
            raise AgentsFileError(f"{where}: mcp_servers: expected a mapping {{server: {{command | url, ...}}}}")
        try:
            servers = tuple(parse_mcp_servers(data["mcp_servers"], where, base=Path(path).parent))
        except ValueError as exc:
            raise AgentsFileError(str(exc).replace(f"{where}: mcpServers.", f"{where}: mcp_servers.", 1)) from None
        also = _or(also, lambda name: any(s.may_name(name) for s in servers))
    agents = {str(n): _agent(n, spec, where, known_tools, also) for n, spec in agents_data.items()}
    default = data.get("default", next(iter(agents)))
    if not isinstance(default, str) or default not in agents:
        raise AgentsFileError(f"{where}: default: {shown(default)} is not one of the agents ({', '.join(agents)})")
    for agent in agents.values():
        _check_links(agent, agents, where, known_tools)
    _check_depth(agents, where, max_depth)
    return AgentsConfig(where, default, agents, servers)


def _or(first: Callable[[str], bool] | None, second: Callable[[str], bool]) -> Callable[[str], bool]:
    return second if first is None else (lambda name: first(name) or second(name))


def _read(path: Path, where: str) -> Any:
    """The parsed file (``inputs.py``: a regular file, bounded size, nesting and YAML aliases)."""
    from ..config.files import InputFileError, load_json, load_yaml, read_text_file

    try:
        text = read_text_file(path, what="agents file")
        if path.suffix.lower() == ".json":
            return load_json(text, what=where)
        return load_yaml(text, what=where)
    except InputFileError as exc:
        raise AgentsFileError(str(exc)) from None


def _agent(
    name: Any, spec: Any, where: str, known_tools: list[str], also: Callable[[str], bool] | None
) -> AgentDef:
    at = f"{where}: agent {shown(name)}"

    def bad(key: str, why: str) -> AgentsFileError:
        return AgentsFileError(f"{at}: {key}: {why}")

    if not isinstance(name, str) or not NAME_RE.match(name):
        raise AgentsFileError(f"{at}: an agent name is a letter then up to 39 letters, digits, '_' or '-'")
    if not isinstance(spec, Mapping):
        raise AgentsFileError(f"{at}: expected a mapping with description, prompt and tools")
    settings_names = agent_setting_names()
    for key in spec:
        if key not in OWN_KEYS and key not in settings_names:
            raise bad(str(key), f"unknown field (an agent has {', '.join(OWN_KEYS)} or a run setting: "
                                f"{', '.join(settings_names)})")
    for key in ("description", "prompt"):
        if not isinstance(spec.get(key), str) or not spec[key].strip():
            raise bad(key, "expected a non-empty text")
    tools = _names(spec.get("tools", []), bad, "tools")
    for pattern in tools:
        if GLOB_CHARS & set(pattern):
            if not fnmatch.filter(known_tools, pattern) and not (also and also(pattern)):
                raise bad("tools", f"{shown(pattern)} matches no tool (known: {', '.join(known_tools)})")
        elif pattern not in known_tools and not (also and also(pattern)):
            raise bad("tools", f"unknown tool {shown(pattern)} (known: {', '.join(known_tools)})")
    settings: dict[str, Any] = {}
    from ..config.context import field_problem

    for key in [k for k in spec if k in settings_names or k == "model"]:
        problem = field_problem(key, spec[key])
        if problem is None and key == "model" and not model_spec_valid(spec[key]):
            problem = f"must be a 'provider:model' string (got {shown(spec[key])})"
        if problem:
            raise bad(key, problem)
        settings[key] = spec[key]
    if "skills" in settings:  # skills folders: relative to the agents file's folder (checked when a run reads them)
        base = Path(where).expanduser().parent
        settings["skills"] = [str(base / os.path.expanduser(folder)) for folder in settings["skills"]]
    from ..policies.middleware import MiddlewareError, load_middleware

    try:
        middleware = load_middleware(_names(spec.get("middleware", []), bad, "middleware"), what=f"{at}: middleware")
    except MiddlewareError as exc:
        raise AgentsFileError(str(exc)) from None
    return AgentDef(
        name=name,
        description=" ".join(spec["description"].split()),
        prompt=spec["prompt"],
        tools=tuple(tools),
        handoffs=tuple(_names(spec.get("handoffs", []), bad, "handoffs")),
        sub_agents=tuple(_names(spec.get("sub_agents", []), bad, "sub_agents")),
        settings=settings,
        middleware=tuple(middleware),
    )


def _names(value: Any, bad: Callable[[str, str], AgentsFileError], key: str) -> list[str]:
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(v, str) and v.strip() for v in value):
        raise bad(key, "expected a list of names")
    return [v.strip() for v in value]


def _check_links(agent: AgentDef, agents: Mapping[str, AgentDef], where: str, known_tools: list[str]) -> None:
    at = f"{where}: agent {shown(agent.name)}"
    for key, targets in (("handoffs", agent.handoffs), ("sub_agents", agent.sub_agents)):
        for target in targets:
            if target not in agents:
                raise AgentsFileError(f"{at}: {key}: unknown agent {shown(target)} (agents: {', '.join(agents)})")
            if target == agent.name:
                raise AgentsFileError(f"{at}: {key}: an agent cannot name itself")
    for target in agent.sub_agents:  # the sub-agent's tool is named after it
        if target in known_tools:
            raise AgentsFileError(
                f"{at}: sub_agents: {shown(target)} is also a tool's name; rename the agent"
            )


def _check_depth(agents: Mapping[str, AgentDef], where: str, max_depth: int | None) -> None:
    """No agent reaches itself through sub_agents, and no chain is deeper than ``max_depth``."""
    if max_depth is None:
        from ..config.context import AgentContext

        max_depth = AgentContext().max_agent_depth

    def walk(name: str, chain: list[str]) -> None:
        for child in agents[name].sub_agents:
            path = [*chain, child]
            if child in chain:
                raise AgentsFileError(
                    f"{where}: agent {shown(chain[0])}: sub_agents: a cycle ({' -> '.join(path)}) nests "
                    f"sub-agents without end (max_agent_depth {max_depth})"
                )
            if len(path) - 1 > max_depth:
                raise AgentsFileError(
                    f"{where}: agent {shown(chain[0])}: sub_agents: {' -> '.join(path)} is deeper than "
                    f"max_agent_depth {max_depth}"
                )
            walk(child, path)

    for name in agents:
        walk(name, [name])


#: The agents file's JSON Schema (``docs/agents.schema.json``, written by
#: ``python -m smart_agent.tools.agents_file > docs/agents.schema.json``; a unit test fails when it is stale):
#: these keys of the file and of an agent, and every run setting an agent may set, from its declaration.
SCHEMA_TOP: dict[str, Any] = {'$schema': 'https://json-schema.org/draft/2020-12/schema',
 'title': 'smart-agent agents file',
 'description': 'Named agents, handoffs and sub-agents (agents.yaml or agents.json). See docs/agents.md.',
 'type': 'object',
 'required': ['agents'],
 'additionalProperties': False,
 'properties': {'$schema': {'type': 'string'},
                'default': {'type': 'string',
                            'pattern': '^[A-Za-z][A-Za-z0-9_-]{0,39}$',
                            'description': 'The agent that holds a new thread (default: the first agent).'},
                'agents': {'type': 'object',
                           'minProperties': 1,
                           'propertyNames': {'type': 'string', 'pattern': '^[A-Za-z][A-Za-z0-9_-]{0,39}$'},
                           'additionalProperties': {'$ref': '#/$defs/agent'}},
                'mcp_servers': {'type': 'object',
                                'description': 'MCP servers of the team, in the mcpServers format ({name: '
                                               '{command, args, env, cwd} | {url, headers}}, plus '
                                               'tool_prefix, side_effects, timeout_s, retries, cost, tools, '
                                               'start_timeout_s); their tools are named <server>__<tool>. '
                                               'The CLI opens them for a run.',
                                'additionalProperties': {'type': 'object'}}}}
AGENT_KEYS_SCHEMA: dict[str, Any] = {'description': {'type': 'string',
                 'minLength': 1,
                 'description': 'What the agent does: the description of its transfer_to_<name> tool and of '
                                'its sub-agent tool <name>.'},
 'prompt': {'type': 'string', 'minLength': 1, 'description': "The agent's system prompt."},
 'tools': {'type': 'array',
           'items': {'type': 'string', 'minLength': 1},
           'description': "Tool names (built-in, plugin or MCP) or globs such as 'read_*'; each must name or "
                          'match a tool.'},
 'model': {'type': 'string', 'description': "Chat model as provider:model (default: the run's model)."},
 'handoffs': {'type': 'array',
              'items': {'type': 'string', 'pattern': '^[A-Za-z][A-Za-z0-9_-]{0,39}$'},
              'description': 'Agents it may transfer the thread to (tools transfer_to_<name>); default '
                             'none.'},
 'sub_agents': {'type': 'array',
                'items': {'type': 'string', 'pattern': '^[A-Za-z][A-Za-z0-9_-]{0,39}$'},
                'description': 'Agents it may call as tools named after them; only their final answer '
                               'returns.'},
 'middleware': {'type': 'array',
                'items': {'type': 'string', 'minLength': 1},
                'description': "LangChain middleware of this agent's turns, as MODULE:ATTR (an "
                               "AgentMiddleware or a list of them), after the graph's own."}}


def agents_schema() -> dict[str, Any]:
    """The agents file's JSON Schema: :data:`SCHEMA_TOP`, an agent's own keys and its run settings."""
    from ..config.context import declaration

    settings = {
        name: {"description": "Run setting (context field): " + declaration(name).help}
        for name in agent_setting_names()
        if name not in AGENT_KEYS_SCHEMA
    }
    agent = {
        "type": "object", "required": ["description", "prompt"], "additionalProperties": False,
        "properties": {**AGENT_KEYS_SCHEMA, **settings},
    }  # fmt: skip
    return {**SCHEMA_TOP, "$defs": {"agent": agent}}


if __name__ == "__main__":
    print(json.dumps(agents_schema(), indent=1, ensure_ascii=False))
