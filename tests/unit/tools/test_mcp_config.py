"""The MCP servers file (tools/mcp_config.py): transports, names, ToolMeta, and one-line errors
that name the file, the server and the field; MCP tools keep their metadata through
``resolve_registry`` (tools/assembly.py); results become the text the model reads."""

from __future__ import annotations

import json

import pytest
from langchain_core.tools import StructuredTool

from smart_agent.tools.assembly import resolve_registry
from smart_agent.tools.mcp import _text
from smart_agent.tools.mcp_config import McpConfigError, load_mcp_config, parse_mcp_servers
from smart_agent.tools.registry import META_KEY, ToolMeta, ToolRegistry


def parse(servers):
    return parse_mcp_servers(servers, "mcp.json")


def test_transport_follows_from_command_or_url():
    stdio, http, sse = parse({
        "fs": {"command": "npx", "args": ["-y", "server"], "env": {"TOKEN": "${TOKEN}"}},
        "web": {"url": "http://127.0.0.1:8000/mcp", "headers": {"X-Key": "k"}},
        "old": {"url": "https://example.com/sse", "transport": "sse"},
    })
    assert stdio.connection == {"transport": "stdio", "command": "npx", "args": ["-y", "server"],
                                "env": {"TOKEN": "${TOKEN}"}}
    assert http.connection == {"transport": "streamable_http", "url": "http://127.0.0.1:8000/mcp",
                               "headers": {"X-Key": "k"}}
    assert sse.connection["transport"] == "sse"


def test_names_and_metadata_default_to_prefixed_with_side_effects():
    (server,) = parse({"fs": {"command": "srv"}})
    assert server.tool_name("read") == "fs__read"
    assert server.meta_of("read") == ToolMeta(side_effects=True, tags=("mcp",), source="mcp:fs")
    assert server.allowed is None and server.may_name("fs__anything") and not server.may_name("fs__")
    assert not server.may_name("other__read")


def test_prefix_allow_list_and_per_tool_metadata():
    (bare,) = parse({"fs": {"command": "srv", "tool_prefix": "", "tools": ["read"]}})
    assert bare.tool_name("read") == "read" and bare.may_name("read") and not bare.may_name("write")
    (server,) = parse({"fs": {"command": "srv", "side_effects": False, "timeout_s": 5,
                              "tools": {"read": {}, "write": {"side_effects": True, "retries": 2}}}})
    assert server.allowed == ("read", "write")
    assert server.meta_of("read").side_effects is False and server.meta_of("read").timeout_s == 5
    write = server.meta_of("write")
    assert write.side_effects and write.retries == 2 and write.timeout_s == 5 and write.source == "mcp:fs"


@pytest.mark.parametrize(
    ("servers", "expected"),
    [
        ({"fs": {"command": "a", "url": "http://x"}}, "mcp.json: mcpServers.fs: give exactly one of"),
        ({"fs": {}}, "mcp.json: mcpServers.fs: give exactly one of"),
        ({"fs": {"command": ""}}, "mcp.json: mcpServers.fs.command: expected a non-empty string"),
        ({"fs": {"command": "a", "args": "x"}}, "mcp.json: mcpServers.fs.args: expected a list of strings"),
        ({"fs": {"command": "a", "env": {"A": 1}}}, "mcp.json: mcpServers.fs.env: expected an object of strings"),
        ({"fs": {"url": "ftp://x"}}, "mcp.json: mcpServers.fs.url: expected an http:// or https:// URL"),
        ({"fs": {"url": "http://x", "transport": "stdio"}}, "mcp.json: mcpServers.fs.transport: stdio needs command"),
        ({"fs": {"url": "http://x", "transport": "ws"}}, "mcp.json: mcpServers.fs.transport: 'ws' is not one of"),
        ({"fs": {"command": "a", "side_effects": "yes"}}, "mcp.json: mcpServers.fs.side_effects: expected true"),
        ({"fs": {"command": "a", "timeout_s": 0}}, "mcp.json: mcpServers.fs.timeout_s: expected a number above 0"),
        ({"fs": {"command": "a", "tools": "read"}}, "mcp.json: mcpServers.fs.tools: expected a list"),
        ({"fs": {"command": "a", "tools": {"r": {"x": 1}}}}, "mcp.json: mcpServers.fs.tools.r.x: unknown key"),
        ({"fs": {"command": "a", "headers": {}}}, "mcp.json: mcpServers.fs.headers: unknown key"),
        ({"f s": {"command": "a"}}, "mcp.json: mcpServers.f s: a server name is"),
        ({"a": {"command": "a", "tool_prefix": "x"}, "b": {"command": "b", "tool_prefix": "x"}},
         "mcp.json: mcpServers.b.tool_prefix: 'x' is already used by 'a'"),
    ],
)
def test_a_bad_server_is_one_line_naming_file_server_and_field(servers, expected):
    with pytest.raises(McpConfigError) as err:
        parse(servers)
    assert str(err.value).startswith(expected) and "\n" not in str(err.value)


def test_the_file_format_and_its_errors(tmp_path):
    path = tmp_path / "mcp.json"
    path.write_text(json.dumps({"mcpServers": {"fs": {"command": "srv", "cwd": "sub"}}}))
    (server,) = load_mcp_config(path)
    assert server.connection["cwd"] == str(tmp_path / "sub")  # relative to the file
    path.write_text("{not json")
    with pytest.raises(McpConfigError, match=r"mcp\.json: not valid JSON \(.* at line 1 column 2\)"):
        load_mcp_config(path)
    path.write_text(json.dumps({"servers": {}}))
    with pytest.raises(McpConfigError, match='expected an object {"mcpServers"'):
        load_mcp_config(path)
    with pytest.raises(McpConfigError, match="MCP config .*missing.json: no such file"):
        load_mcp_config(tmp_path / "missing.json")


def test_a_tool_carrying_its_meta_keeps_it_in_the_agent_registry():
    async def run(x: int) -> str:
        return str(x)

    meta = ToolMeta(side_effects=True, source="mcp:fs", tags=("mcp",))
    carried = StructuredTool.from_function(coroutine=run, name="fs__run", description="d", metadata={META_KEY: meta})
    plain = StructuredTool.from_function(coroutine=run, name="plain", description="d")
    registry = resolve_registry(ToolRegistry(), [carried, plain])
    assert registry.meta("fs__run") == meta
    assert registry.meta("plain") == ToolMeta(source="user")


def test_results_become_text():
    assert _text("5", None) == "5"
    assert _text([{"type": "text", "text": "a"}, {"type": "text", "text": "b"}], None) == "a\nb"
    assert _text([{"type": "image", "mime_type": "image/png"}], None) == "[image image/png]"
    assert _text([], {"structured_content": {"n": 1}}) == '{"n": 1}'
