"""browse_url and web_search over real sockets on 127.0.0.1 (tests/unit runs without any): pages
from a local HTTP server, and a search whose backend finds no network (a closed local port)."""

from __future__ import annotations

import http.server
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from tool_support import call, make_runtime

from smart_agent.tools.guards import ToolError
from smart_agent.tools.web import browse_url, web_search

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


# -- web_search without a network -----------------------------------------------------
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
