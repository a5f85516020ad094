"""browse_url failures that may not happen again are retryable; the others are not.

Before: every fetch failure was a plain ToolError raised ``from None``, so the planner
never retried a ``browse_url`` step whose server timed out or dropped the connection.
Now a timeout or a connection failure is a ``FetchUnavailableError`` (a ToolError with
``retryable = True``), while SSRF refusals, invalid URLs and HTTP errors stay plain
ToolErrors that ``tools/retry.is_retryable`` never retries.
"""

from __future__ import annotations

import contextlib
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from conftest import openai_model, run_graph

from security.hostile_http import SilentServer, _RawServer
from smart_agent.config.context import Context
from smart_agent.graphs.planner import build_planner_graph
from smart_agent.tools.builtins import default_registry
from smart_agent.tools.guards import ToolError
from smart_agent.tools.retry import is_retryable
from smart_agent.tools.web import fetch_url


class ClosingServer(_RawServer):
    """Accepts, reads the request, closes the connection without a byte of reply."""

    def _serve(self, conn: socket.socket) -> None:
        with contextlib.suppress(OSError):
            conn.recv(65536)
        conn.close()


class NotFoundServer:
    def __init__(self) -> None:
        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args) -> None:
                pass

            def do_GET(self) -> None:
                self.send_error(404)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"

    def __enter__(self):
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def unused_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def failure(url: str, **kw) -> ToolError:
    kw.setdefault("allow_private_network", True)
    with pytest.raises(ToolError) as info:
        fetch_url(url, **kw)
    return info.value


@pytest.mark.unit
def test_a_dropped_connection_is_retryable():
    with ClosingServer() as srv:
        exc = failure(f"{srv.url}/page")
    assert is_retryable(exc), exc
    assert str(exc).startswith(f"Could not fetch {srv.url}/page")


@pytest.mark.unit
def test_a_refused_connection_is_retryable():
    exc = failure(f"http://127.0.0.1:{unused_port()}/page")
    assert is_retryable(exc), exc


@pytest.mark.unit
def test_a_timeout_is_retryable():
    with SilentServer() as srv:
        exc = failure(f"{srv.url}/page", total_timeout_s=0.5)
    assert is_retryable(exc), exc
    assert "Timed out fetching" in str(exc)


@pytest.mark.unit
def test_refusals_bad_urls_and_http_errors_are_not_retryable():
    with ClosingServer() as srv:  # a loopback address: refused without allow_private_network
        refused = failure(f"{srv.url}/page", allow_private_network=False)
        assert srv.connections == 0
    assert str(refused).startswith("Refused") and not is_retryable(refused)
    for url in ("ftp://example.com/x", "http://", "http://[::1"):
        exc = failure(url)
        assert not is_retryable(exc), (url, exc)
    with NotFoundServer() as srv:
        not_found = failure(f"{srv.url}/missing")
    assert str(not_found).startswith("HTTP 404") and not is_retryable(not_found)


@pytest.mark.graph
async def test_the_planner_retries_a_browse_url_step_whose_connection_drops(scripted_server):
    with ClosingServer() as pages:
        plan = {
            "steps": [
                {
                    "id": "page",
                    "tool": "browse_url",
                    "args": {"url": f"{pages.url}/x"},
                    "retries": 2,
                    "on_fail": "continue",
                }
            ]
        }
        server = scripted_server(
            [{"tool_calls": [{"name": "submit_plan", "arguments": plan}]}, "the page could not be read"]
        )
        graph = build_planner_graph(
            model=openai_model(server), registry=default_registry(entry_points=False), backoff_base_s=0.01
        )
        final = await run_graph(graph, "read the page", Context(model="openai:scripted", allow_private_network=True))
        connections = pages.connections
    assert connections == 3  # one attempt and both retries
    assert final["step_results"]["page"]["status"] == "failed"
