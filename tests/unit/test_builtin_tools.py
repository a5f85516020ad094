"""The built-in tools, invoked the way the tools node invokes them (no network needed)."""

from __future__ import annotations

import http.server
import socket
import threading
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from langchain.tools import ToolRuntime
from langchain_core.messages import ToolMessage
from langchain_core.tools import BaseTool
from pydantic import BaseModel

from smart_agent.context import Context
from smart_agent.tools import web
from smart_agent.tools.builtins import BUILTIN_TOOLS, default_registry
from smart_agent.tools.calculator import calculator
from smart_agent.tools.files import MAX_LIST_ENTRIES, list_files, read_file, write_file
from smart_agent.tools.guards import ToolError
from smart_agent.tools.registry import ToolMeta
from smart_agent.tools.web import browse_url, fetch_url, web_search

PUBLIC_IP = "93.184.216.34"
BUILTIN_NAMES = [
    "calculator",
    "read_file",
    "list_files",
    "write_file",
    "edit_file",
    "glob",
    "grep",
    "browse_url",
    "web_search",
    "ask_user",
    "remember",
    "search_memory",
]


def make_runtime(workspace: Path, **context: Any) -> ToolRuntime:
    return ToolRuntime(
        state={},
        context=Context(workspace=str(workspace), **context),
        config={},
        stream_writer=lambda x: None,
        tool_call_id="c1",
        store=None,
    )


def call(tool: BaseTool, runtime: ToolRuntime | None = None, **args: Any) -> ToolMessage:
    """Invoke ``tool`` with a model tool call, injecting ``runtime`` like the tools node does."""
    if runtime is not None:
        args["runtime"] = runtime
    message = tool.invoke({"type": "tool_call", "id": "c1", "name": tool.name, "args": args})
    assert isinstance(message, ToolMessage)
    assert message.tool_call_id == "c1" and message.name == tool.name
    return message


@pytest.fixture
def rt(tmp_path: Path) -> ToolRuntime:
    return make_runtime(tmp_path)


# -- schemas and registry ---------------------------------------------------------
@pytest.mark.parametrize("tool", [t for t, _ in BUILTIN_TOOLS], ids=lambda t: t.name)
def test_schemas_hide_runtime_and_describe_every_argument(tool: BaseTool) -> None:
    assert isinstance(tool.args_schema, type) and issubclass(tool.args_schema, BaseModel)
    schema = tool.tool_call_schema.model_json_schema()
    assert "runtime" not in schema["properties"]
    assert "runtime" not in tool.args
    assert schema["properties"], tool.name
    for name, prop in schema["properties"].items():
        assert prop.get("description"), f"{tool.name}.{name} has no description"
    assert tool.description and len(tool.description) < 600


def test_default_registry(tmp_path: Path) -> None:
    registry = default_registry(plugins_folder=tmp_path / "no-plugins", entry_points=False)
    assert registry.names() == BUILTIN_NAMES
    assert registry.meta("write_file").side_effects is True
    assert registry.meta("remember").side_effects is True
    assert registry.meta("edit_file").side_effects is True
    writers = ("write_file", "edit_file", "remember")
    assert all(not registry.meta(n).side_effects for n in BUILTIN_NAMES if n not in writers)
    assert registry.meta("browse_url") == ToolMeta(timeout_s=30, retries=1, tags=("web",))
    assert registry.meta("web_search").timeout_s == 20
    assert registry.meta("calculator").source == "builtin"
    other = default_registry(plugins_folder=tmp_path / "no-plugins", entry_points=False)
    registry.unregister("calculator")
    assert "calculator" in other  # a new registry every time


PLUGIN = '''
from langchain_core.tools import tool

@tool
def shout(text: str) -> str:
    """Upper-case the text."""
    return text.upper()

TOOLS = [shout]
'''


def test_default_registry_loads_folder_plugins(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "plugins").mkdir()
    (tmp_path / "plugins" / "shout.py").write_text(PLUGIN)
    registry = default_registry(plugins_folder=tmp_path / "plugins", entry_points=False)
    assert registry.names() == [*BUILTIN_NAMES, "shout"]
    assert registry.meta("shout").source == "plugin:shout.py"
    assert registry.get("shout").invoke({"text": "hi"}) == "HI"

    home = tmp_path / "home"
    (home / "plugins").mkdir(parents=True)
    (home / "plugins" / "shout.py").write_text(PLUGIN)
    monkeypatch.delenv("SMART_AGENT_PLUGINS", raising=False)
    monkeypatch.setenv("SMART_AGENT_HOME", str(home))
    assert "shout" not in default_registry(entry_points=False)  # never implicitly from the data folder
    monkeypatch.setenv("SMART_AGENT_PLUGINS", str(home / "plugins"))  # only from a configured folder
    assert "shout" in default_registry(entry_points=False)
    monkeypatch.delenv("SMART_AGENT_HOME")
    monkeypatch.delenv("SMART_AGENT_PLUGINS")
    monkeypatch.chdir(tmp_path / "home")  # default home: ./.smart-agent
    assert "shout" not in default_registry(entry_points=False)


# -- calculator -------------------------------------------------------------------
@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        ("37*43", "1591"),
        ("7/2", "3.5"),
        ("10/2", "5"),
        ("2 + 3 * 4", "14"),
        ("(2 + 3) * 4", "20"),
        ("-3 ** 2", "-9"),
        ("2 ** -1", "0.5"),
        ("17 // 5", "3"),
        ("17 % 5", "2"),
        ("+-+4", "-4"),
        ("0.1 + 0.2", "0.3"),
        ("2**100", "1267650600228229401496703205376"),
        ("sqrt(16)", "4"),
        ("log(e)", "1"),
        ("log(8, 2)", "3"),
        ("exp(0)", "1"),
        ("sin(0) + cos(0)", "1"),
        ("tan(pi/4)", "1"),
        ("abs(-5.5)", "5.5"),
        ("round(2.567, 2)", "2.57"),
        ("min(3, 1, 2) + max(3, 1, 2)", "4"),
        ("floor(7.9) + ceil(0.1)", "8"),
        ("pi", "3.14159265358979"),
        ("1e20", "1e+20"),
    ],
)
def test_calculator_arithmetic(expression: str, expected: str) -> None:
    assert calculator.func(expression) == expected


def test_calculator_through_a_tool_call() -> None:
    message = call(calculator, expression="37*43")
    assert message.content == "1591"


@pytest.mark.parametrize(
    ("expression", "error"),
    [
        ("__import__('os')", "Unknown function '__import__'"),
        ("__import__('os').system('echo hi')", "attribute access"),
        ("(1).__class__", "attribute access"),
        ("().__class__.__bases__[0]", "indexing"),
        ("().__class__.__bases__", "attribute access"),
        ("open('/etc/passwd')", "Unknown function 'open'"),
        ("x + 1", "Unknown name 'x'"),
        ("__builtins__", "Unknown name"),
        ("(lambda: 1)()", "lambda"),
        ("[1, 2][0]", "indexing"),
        ("'a' * 3", "only numbers"),
        ("True + 1", "only numbers"),
        ("1 < 2", "comparisons"),
        ("2 ^ 3", "use '\\*\\*'"),
        ("9**9**9", "too large"),
        ("10**10000", "too large"),
        ("2**5000", "too large"),
        ("(2**4000) * (2**4000)", "too large"),
        ("1e308 * 10", "not a finite"),
        ("exp(1000)", "overflow"),
        ("1/0", "Division by zero"),
        ("log(0)", "math domain"),
        ("(-8) ** 0.5", "complex"),
        ("1 +", "Invalid expression"),
        ("", "Empty"),
        ("1+" * 300 + "1", "too long"),
        ("round(2.5, ndigits=1)", "Keyword"),
        ("1, 5", "tuple"),
    ],
)
def test_calculator_refusals(expression: str, error: str) -> None:
    started = time.monotonic()
    with pytest.raises(ToolError, match=error):
        calculator.func(expression)
    assert time.monotonic() - started < 1


def test_calculator_error_through_a_tool_call_raises_tool_error() -> None:
    # The tools node turns the exception into an error ToolMessage.
    with pytest.raises(ToolError, match="Unknown function"):
        call(calculator, expression="__import__('os')")


# -- file tools --------------------------------------------------------------------
def test_file_round_trip(tmp_path: Path, rt: ToolRuntime) -> None:
    assert (
        call(write_file, rt, path="notes/a.txt", content="hello world!").content == "Wrote 12 characters to notes/a.txt"
    )
    assert (tmp_path / "notes" / "a.txt").read_text() == "hello world!"
    assert call(read_file, rt, path="notes/a.txt").content == "hello world!"
    call(write_file, rt, path="b.txt", content="x")
    assert call(list_files, rt).content == "b.txt\nnotes/"
    assert call(list_files, rt, path="notes").content == "a.txt"
    # overwrite; text is written as-is (no newline translation)
    call(write_file, rt, path="notes/a.txt", content="line1\r\nline2\n")
    assert (tmp_path / "notes" / "a.txt").read_bytes() == b"line1\r\nline2\n"
    assert call(read_file, rt, path="notes/a.txt").content == "line1\r\nline2\n"


def test_file_tools_called_directly(tmp_path: Path, rt: ToolRuntime) -> None:
    assert write_file.func("d/e.txt", "ünïcode", runtime=rt) == "Wrote 7 characters to d/e.txt"
    assert read_file.func("d/e.txt", runtime=rt) == "ünïcode"
    assert list_files.func("d", runtime=rt) == "e.txt"


def test_file_tools_accept_a_dict_context(tmp_path: Path) -> None:
    runtime = ToolRuntime(
        state={},
        context={"workspace": str(tmp_path)},
        config={},
        stream_writer=lambda x: None,
        tool_call_id="c1",
        store=None,
    )
    call(write_file, runtime, path="x.txt", content="dict")
    assert (tmp_path / "x.txt").read_text() == "dict"


def test_file_tools_without_runtime_use_the_current_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SMART_AGENT_WORKSPACE", raising=False)
    monkeypatch.chdir(tmp_path)
    assert call(write_file, path="cwd.txt", content="here").content == "Wrote 4 characters to cwd.txt"
    assert (tmp_path / "cwd.txt").read_text() == "here"
    assert read_file.func("cwd.txt") == "here"


def test_read_file_pages(tmp_path: Path, rt: ToolRuntime) -> None:
    # without offset/limit: the text up to max_chars; the note names the line to read on from (offset is a line)
    (tmp_path / "long.txt").write_text("0123456789\n" * 3)
    first = call(read_file, rt, path="long.txt", max_chars=16).content
    assert first.startswith("0123456789\n01234\n\n[Truncated")
    assert "showed line 1 and the beginning of line 2 of long.txt" in first and "offset=2" in first
    second = call(read_file, rt, path="long.txt", offset=2, max_chars=16).content
    assert second == "0123456789\n\n[Lines 2-2 of 3 in long.txt. Call read_file with offset=3 to read more.]"
    third = call(read_file, rt, path="long.txt", offset=3, max_chars=16).content
    assert third == "0123456789\n\n[Lines 3-3 of 3 in long.txt; the end of the file.]"
    assert "Nothing to read at line 99: long.txt has only 3 lines" in call(
        read_file, rt, path="long.txt", offset=99).content
    (tmp_path / "empty.txt").write_text("")
    assert call(read_file, rt, path="empty.txt").content == "[The file is empty.]"


def test_read_file_replaces_invalid_utf8(tmp_path: Path, rt: ToolRuntime) -> None:
    (tmp_path / "latin.txt").write_bytes("café".encode("latin-1"))
    assert call(read_file, rt, path="latin.txt").content == "caf\ufffd"


def test_read_file_errors(tmp_path: Path, rt: ToolRuntime) -> None:
    (tmp_path / "dir").mkdir()
    (tmp_path / "img.png").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")
    with pytest.raises(ToolError, match="does not exist"):
        call(read_file, rt, path="missing.txt")
    with pytest.raises(ToolError, match="is a directory"):
        call(read_file, rt, path="dir")
    with pytest.raises(ToolError, match="binary"):
        call(read_file, rt, path="img.png")
    with pytest.raises(ToolError, match="outside the workspace"):
        call(read_file, rt, path="../../etc/passwd")
    with pytest.raises(ToolError, match="outside the workspace"):
        call(read_file, rt, path="/etc/passwd")


def test_list_files_errors_and_cap(tmp_path: Path, rt: ToolRuntime) -> None:
    (tmp_path / "f.txt").write_text("x")
    (tmp_path / "empty").mkdir()
    with pytest.raises(ToolError, match="is a file"):
        call(list_files, rt, path="f.txt")
    with pytest.raises(ToolError, match="does not exist"):
        call(list_files, rt, path="nope")
    with pytest.raises(ToolError, match="outside the workspace"):
        call(list_files, rt, path="..")
    assert call(list_files, rt, path="empty").content == "[The folder is empty.]"
    many = tmp_path / "many"
    many.mkdir()
    for i in range(MAX_LIST_ENTRIES + 20):
        (many / f"f{i:04d}").touch()
    lines = call(list_files, rt, path="many").content.splitlines()
    assert len(lines) == MAX_LIST_ENTRIES + 1
    assert lines[0] == "f0000" and lines[-1] == "[... and 20 more entries not shown.]"


def test_write_file_refuses_escapes(tmp_path: Path) -> None:
    workspace, outside = tmp_path / "ws", tmp_path / "outside"
    workspace.mkdir()
    outside.mkdir()
    (outside / "victim.txt").write_text("original")
    (workspace / "linkdir").symlink_to(outside, target_is_directory=True)
    (workspace / "linkfile").symlink_to(outside / "victim.txt")
    runtime = make_runtime(workspace)
    for path in ["linkdir/new.txt", "linkdir/sub/new.txt", "linkfile", "../outside/new.txt", str(outside / "new.txt")]:
        with pytest.raises(ToolError, match="outside the workspace"):
            call(write_file, runtime, path=path, content="pwned")
    assert sorted(p.name for p in outside.iterdir()) == ["victim.txt"]
    assert (outside / "victim.txt").read_text() == "original"
    with pytest.raises(ToolError, match="NUL"):
        call(write_file, runtime, path="a\x00b", content="x")
    with pytest.raises(ToolError, match="outside the workspace"):
        call(write_file, runtime, path="linkdir/..", content="x")  # '..' applies after the link
    (workspace / "sub").mkdir()
    with pytest.raises(ToolError, match="is a directory"):
        call(write_file, runtime, path="sub", content="x")


# -- browse_url: redirects, caps, content types (mock transport) -------------------------
def public_resolver(host: str) -> list[str]:
    return [PUBLIC_IP]


def seen(request: httpx.Request) -> str:
    """Which host a request was for, and where it was actually sent."""
    return f"{request.headers['host']} via {request.url}"


def test_redirect_to_a_private_address_is_refused() -> None:
    requested: list[str] = []

    def handler(request: httpx.Request) -> httpx.Response:
        requested.append(seen(request))
        if request.headers["host"] == "public.example":
            return httpx.Response(302, headers={"Location": "http://127.0.0.1:8765/secret"})
        return httpx.Response(200, text="internal secret")

    transport = httpx.MockTransport(handler)
    with pytest.raises(ToolError, match="127.0.0.1 resolves to a private/loopback address"):
        fetch_url(
            "http://public.example/start", allow_private_network=False, transport=transport, resolve=public_resolver
        )
    assert requested == [f"public.example via http://{PUBLIC_IP}/start"]  # 127.0.0.1 was never contacted


def test_redirect_to_a_private_address_is_refused_through_the_tool(
    monkeypatch: pytest.MonkeyPatch, rt: ToolRuntime
) -> None:
    hosts: list[str] = []

    def handler(request: httpx.Request) -> httpx.Response:
        hosts.append(request.headers["host"])
        return httpx.Response(301, headers={"Location": "http://169.254.169.254/latest/meta-data/"})

    monkeypatch.setattr(web, "_transport", httpx.MockTransport(handler))
    monkeypatch.setattr(web, "_resolve", public_resolver)
    with pytest.raises(ToolError, match="169.254.169.254 resolves to a private"):
        call(browse_url, rt, url="https://public.example/")
    assert hosts == ["public.example"]


@pytest.mark.parametrize(
    ("location", "error"),
    [
        ("file:///etc/passwd", "only http and https"),
        ("http://[::1]:8080/", "private/loopback"),
        ("//10.0.0.1/x", "private/loopback"),
        ("http://2130706433/", "private/loopback"),
    ],
)
def test_redirects_to_forbidden_targets_are_refused(location: str, error: str) -> None:
    requested: list[str] = []

    def handler(request: httpx.Request) -> httpx.Response:
        requested.append(seen(request))
        return httpx.Response(302, headers={"Location": location})

    resolver = lambda host: [PUBLIC_IP] if host == "public.example" else ["127.0.0.1"]  # noqa: E731
    with pytest.raises(ToolError, match=error):
        fetch_url(
            "http://public.example/",
            allow_private_network=False,
            transport=httpx.MockTransport(handler),
            resolve=resolver,
        )
    assert requested == [f"public.example via http://{PUBLIC_IP}/"]


def test_connection_is_pinned_to_the_checked_address() -> None:
    """DNS rebinding: a name that resolves to a public address when checked and to
    127.0.0.1 afterwards is still fetched from the checked address, resolved once."""
    answers = iter([[PUBLIC_IP], ["127.0.0.1"], ["127.0.0.1"]])
    resolved: list[str] = []
    requests: list[httpx.Request] = []

    def rebinding(host: str) -> list[str]:
        resolved.append(host)
        return next(answers)

    def handler(request: httpx.Request) -> httpx.Response:
        requests.append(request)
        return httpx.Response(200, text="public page", headers={"Content-Type": "text/plain"})

    result = fetch_url(
        "https://rebind.example:8443/p?q=1",
        allow_private_network=False,
        transport=httpx.MockTransport(handler),
        resolve=rebinding,
    )
    assert result.body == b"public page" and result.url == "https://rebind.example:8443/p?q=1"
    assert resolved == ["rebind.example"]
    (request,) = requests
    assert str(request.url) == f"https://{PUBLIC_IP}:8443/p?q=1"
    assert request.headers["host"] == "rebind.example:8443"
    assert request.extensions["sni_hostname"] == "rebind.example"  # certificate checked against the name


def test_redirects_are_followed_and_rechecked() -> None:
    checked: list[str] = []

    def resolve(host: str) -> list[str]:
        checked.append(host)
        return [PUBLIC_IP]

    def handler(request: httpx.Request) -> httpx.Response:
        if request.url.path == "/a":
            return httpx.Response(301, headers={"Location": "/b"})
        if request.url.path == "/b":
            return httpx.Response(307, headers={"Location": "https://other.example/c"})
        return httpx.Response(200, text="arrived", headers={"Content-Type": "text/plain; charset=utf-8"})

    result = fetch_url(
        "http://one.example/a", allow_private_network=False, transport=httpx.MockTransport(handler), resolve=resolve
    )
    assert (result.url, result.status_code, result.body, result.content_type) == (
        "https://other.example/c",
        200,
        b"arrived",
        "text/plain",
    )
    assert checked == ["one.example", "one.example", "other.example"]


def test_too_many_redirects() -> None:
    count = 0

    def handler(request: httpx.Request) -> httpx.Response:
        nonlocal count
        count += 1
        return httpx.Response(302, headers={"Location": f"/hop{count}"})

    with pytest.raises(ToolError, match="Too many redirects"):
        fetch_url(
            "http://loop.example/",
            allow_private_network=False,
            transport=httpx.MockTransport(handler),
            resolve=public_resolver,
        )
    assert count == 6  # the first request + 5 redirects


def test_body_is_capped_while_streaming(monkeypatch: pytest.MonkeyPatch, rt: ToolRuntime) -> None:
    pulled = 0

    async def endless() -> AsyncIterator[bytes]:  # browse_url reads with httpx's AsyncClient
        nonlocal pulled
        while True:
            pulled += 1
            yield b"a" * 65536

    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, headers={"Content-Type": "text/plain"}, content=endless())

    monkeypatch.setattr(web, "_transport", httpx.MockTransport(handler))
    monkeypatch.setattr(web, "_resolve", public_resolver)
    result = fetch_url(
        "http://big.example/",
        allow_private_network=False,
        transport=web._transport,
        resolve=public_resolver,
        max_bytes=100_000,
    )
    assert result.truncated and len(result.body) == 100_000 and pulled == 2

    pulled = 0
    content = call(browse_url, rt, url="http://big.example/", max_chars=1000).content
    assert pulled == web.MAX_BODY_BYTES // 65536
    assert content.startswith("URL: http://big.example/\n\n" + "a" * 1000 + "\n\n[Truncated: showing the first 1000 of")
    assert content.endswith("[The response was larger than 2 MB; only the beginning was read.]")


@pytest.mark.parametrize(
    ("headers", "body", "expected"),
    [
        ({"Content-Type": "application/json"}, b'{"a": 1}', '{"a": 1}'),
        ({"Content-Type": "text/plain; charset=latin-1"}, "café".encode("latin-1"), "café"),
        ({}, b"plain text without a type", "plain text without a type"),
        ({"Content-Type": "text/plain; charset=bogus"}, b"unknown charset", "unknown charset"),
        ({"Content-Type": "text/html; charset=utf-8"}, b"<title>T</title><p>Hi <b>there</b></p>", "Hi there"),
    ],
)
def test_content_types(
    monkeypatch: pytest.MonkeyPatch, rt: ToolRuntime, headers: dict[str, str], body: bytes, expected: str
) -> None:
    monkeypatch.setattr(
        web, "_transport", httpx.MockTransport(lambda r: httpx.Response(200, headers=headers, content=body))
    )
    monkeypatch.setattr(web, "_resolve", public_resolver)
    assert call(browse_url, rt, url="http://site.example/").content.endswith("\n\n" + expected)


def test_binary_and_http_errors(monkeypatch: pytest.MonkeyPatch, rt: ToolRuntime) -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        if request.url.path == "/img":
            return httpx.Response(200, headers={"Content-Type": "image/png"}, content=b"\x89PNG\x00\x00")
        return httpx.Response(404)

    monkeypatch.setattr(web, "_transport", httpx.MockTransport(handler))
    monkeypatch.setattr(web, "_resolve", public_resolver)
    with pytest.raises(ToolError, match="image/png"):
        call(browse_url, rt, url="http://site.example/img")
    with pytest.raises(ToolError, match="HTTP 404 Not Found"):
        call(browse_url, rt, url="http://site.example/missing")
    with pytest.raises(ToolError, match="only http and https"):
        call(browse_url, rt, url="file:///etc/passwd")


def test_network_errors_become_tool_errors() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("connection refused", request=request)

    with pytest.raises(ToolError, match="Could not fetch http://down.example/: connection refused"):
        fetch_url(
            "http://down.example/",
            allow_private_network=False,
            transport=httpx.MockTransport(handler),
            resolve=public_resolver,
        )


# -- browse_url against a real local server -------------------------------------------------
PAGE = b"""<!doctype html><html><head><title>Local  Test Page</title>
<style>body { color: red }</style><script>alert("no")</script></head>
<body><nav><a href="/">Home</a> | <a href="/about">About</a></nav>
<h1>Welcome</h1><p>Hello <b>local</b>   world.<br>Second line</p>
<ul><li>first</li><li>second</li></ul><noscript>Enable JavaScript</noscript>
<svg><text>logo</text></svg><footer>Copyright 2025</footer></body></html>"""


class _Handler(http.server.BaseHTTPRequestHandler):
    requests: list[str] = []

    def do_GET(self) -> None:
        type(self).requests.append(self.path)
        if self.path == "/redirect":
            self.send_response(302)
            self.send_header("Location", "/")
            self.end_headers()
            return
        self.send_response(200)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(PAGE)))
        self.end_headers()
        self.wfile.write(PAGE)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def local_server(monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    for var in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"):
        monkeypatch.delenv(var, raising=False)
    _Handler.requests = []
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def test_local_page_is_fetched_and_converted_when_allowed(tmp_path: Path, local_server: str) -> None:
    content = call(
        browse_url, make_runtime(tmp_path, allow_private_network=True), url=local_server + "/redirect"
    ).content
    assert content == (
        f"URL: {local_server}/\nTitle: Local Test Page\n\nWelcome\nHello local world.\nSecond line\n- first\n- second"
    )
    assert _Handler.requests == ["/redirect", "/"]


def test_local_page_is_refused_by_default(tmp_path: Path, local_server: str) -> None:
    with pytest.raises(ToolError, match=r"127\.0\.0\.1 resolves to a private/loopback address.*allow_private_network"):
        call(browse_url, make_runtime(tmp_path), url=local_server + "/")
    assert _Handler.requests == []


# -- web_search ------------------------------------------------------------------------
def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_web_search_offline_fails_fast(monkeypatch: pytest.MonkeyPatch) -> None:
    # Route ddgs through a closed local port: "no network", whatever the machine has.
    monkeypatch.setenv("DDGS_PROXY", f"http://127.0.0.1:{closed_port()}")
    started = time.monotonic()
    with pytest.raises(ToolError, match=r"^web search unavailable: .*\(no network\?\)$"):
        call(web_search, query="langgraph tool node")
    assert time.monotonic() - started < 10


def test_web_search_hanging_backend_hits_the_deadline(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(web, "_search_backend", lambda q, n, t: time.sleep(5) or [])
    monkeypatch.setattr(web, "SEARCH_DEADLINE_S", 0.2)
    started = time.monotonic()
    with pytest.raises(ToolError, match="web search unavailable: no answer within 0.2 s"):
        call(web_search, query="anything")
    assert time.monotonic() - started < 2


def test_web_search_formats_results(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[tuple[str, int, int]] = []

    def backend(query: str, n: int, timeout: int) -> list[dict[str, Any]]:
        seen.append((query, n, timeout))
        return [
            {
                "title": "LangGraph",
                "href": "https://langchain-ai.github.io/langgraph/",
                "body": "Build  stateful\nagents.",
            },
            {"title": "Docs", "href": "https://docs.example/", "body": ""},
        ]

    monkeypatch.setattr(web, "_search_backend", backend)
    content = call(web_search, query=" langgraph ", num_results=2).content
    assert content == (
        "1. LangGraph — https://langchain-ai.github.io/langgraph/\n   Build stateful agents.\n"
        "2. Docs — https://docs.example/"
    )
    assert seen == [("langgraph", 2, web.SEARCH_REQUEST_TIMEOUT_S)]


def test_web_search_no_results(monkeypatch: pytest.MonkeyPatch) -> None:
    from ddgs.exceptions import DDGSException

    def backend(query: str, n: int, timeout: int) -> list[dict[str, Any]]:
        raise DDGSException("No results found.")

    monkeypatch.setattr(web, "_search_backend", backend)
    assert call(web_search, query="xyzzy").content == "No results found for 'xyzzy'."
