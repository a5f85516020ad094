"""browse_url and web_search, invoked the way the tools node invokes them: redirects, caps and content
types through a mock transport, search backends that fail or hang (pages from a real local server and
a search without a network: tests/graph/test_web_local.py)."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
from langchain.tools import ToolRuntime
from tool_support import call, call_text

from smart_agent.tools import web
from smart_agent.tools.guards import ToolError
from smart_agent.tools.web import browse_url, fetch_url, web_search

PUBLIC_IP = "93.184.216.34"


# -- browse_url: redirects, caps, content types (mock transport) -------------------------
def public_resolver(host: str) -> list[str]:
    return [PUBLIC_IP]


def mock_fetch(url: str, handler: Any, resolve: Any = public_resolver, **kw: Any) -> web.FetchResult:
    """``fetch_url`` with private addresses refused, answered by ``handler`` (a mock transport),
    host names resolved by ``resolve``."""
    return fetch_url(url, allow_private_network=False, transport=httpx.MockTransport(handler), resolve=resolve, **kw)


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

    with pytest.raises(ToolError, match="127.0.0.1 resolves to a private/loopback address"):
        mock_fetch("http://public.example/start", handler)
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
        mock_fetch("http://public.example/", handler, resolve=resolver)
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

    result = mock_fetch("https://rebind.example:8443/p?q=1", handler, resolve=rebinding)
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

    result = mock_fetch("http://one.example/a", handler, resolve=resolve)
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
        mock_fetch("http://loop.example/", handler)
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
    result = mock_fetch("http://big.example/", handler, max_bytes=100_000)
    assert result.truncated and len(result.body) == 100_000 and pulled == 2

    pulled = 0
    content = call_text(browse_url, rt, url="http://big.example/", max_chars=1000)
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
    assert call_text(browse_url, rt, url="http://site.example/").endswith("\n\n" + expected)


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
        mock_fetch("http://down.example/", handler)


# -- web_search ------------------------------------------------------------------------
def test_web_search_hanging_backend_hits_the_deadline(monkeypatch: pytest.MonkeyPatch) -> None:
    def hanging(query: str, n: int, timeout: int) -> list[dict[str, Any]]:
        time.sleep(5)
        return []

    monkeypatch.setattr(web, "_search_backend", hanging)
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


# -- the shared SSL context: one build however many fetches start at once ---------------
async def test_concurrent_first_fetches_wait_on_one_ssl_context_build(monkeypatch) -> None:
    import asyncio
    import threading

    builds: list[str] = []
    gate = threading.Event()

    def create_ssl_context() -> object:
        builds.append(threading.current_thread().name)
        gate.wait(5)
        if len(builds) == 1:
            raise OSError("no CA bundle")  # the first build fails: handed to every waiter
        return object()

    monkeypatch.setattr(web, "_ssl_build", None)
    monkeypatch.setattr(web.httpx, "create_ssl_context", create_ssl_context)

    async def wait() -> object:
        return await asyncio.wrap_future(web.ssl_context_build())

    first = [asyncio.ensure_future(wait()) for _ in range(8)]
    await asyncio.sleep(0.01)
    first[0].cancel()  # one waiter gives up: the others' build goes on
    gate.set()
    outcomes = await asyncio.gather(*first, return_exceptions=True)
    assert isinstance(outcomes[0], asyncio.CancelledError)
    assert all(isinstance(o, OSError) for o in outcomes[1:]), outcomes
    again = await asyncio.gather(*(wait() for _ in range(8)))  # the failure is not kept: built anew, once
    assert len({id(c) for c in again}) == 1
    assert builds == ["smart-agent-ssl", "smart-agent-ssl"]
