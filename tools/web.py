"""Web tools: ``browse_url`` (SSRF-guarded fetch + HTML to text) and ``web_search`` (ddgs)."""

from __future__ import annotations

import asyncio
import functools
import re
import ssl
import threading
from collections.abc import Callable, Mapping
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any, TypeVar
from urllib.parse import urlsplit, urlunsplit

import httpx
from langchain.tools import ToolRuntime
from langchain_core.tools import StructuredTool, tool
from pydantic import BaseModel, Field

from .. import __version__
from ..config.context import context_field
from ..runs.events import clip
from .executor import run_in_daemon_thread
from .guards import Resolver, ToolError, allow_private_network_of, check_url_allowed
from .html_text import html_to_text, known_codec

__all__ = [
    "BrowseUrlArgs",
    "FetchResult",
    "FetchUnavailableError",
    "WebSearchArgs",
    "browse_url",
    "fetch_url",
    "format_results",
    "html_to_text",
    "search_web",
    "web_search",
]

MAX_REDIRECTS = 5
MAX_BODY_BYTES = 2 * 1024 * 1024
CONNECT_TIMEOUT_S = 10.0
READ_TIMEOUT_S = 10.0  # per read / write / pool wait
TOTAL_TIMEOUT_S = 20.0  # whole fetch, checked between hops and body chunks
DEFAULT_PAGE_CHARS = 20_000
MAX_PAGE_CHARS = 100_000
USER_AGENT = f"smart-agent/{__version__}"

SEARCH_REQUEST_TIMEOUT_S = 4  # per search-engine request (ddgs)
SEARCH_DEADLINE_S = 8.0  # whole search; ddgs alone can take several request timeouts

#: Test hooks: the transport and resolver ``browse_url`` uses (None: real network / DNS).
_transport: httpx.AsyncBaseTransport | None = None
_resolve: Resolver | None = None


# -- fetching -------------------------------------------------------------------
class FetchUnavailableError(ToolError):
    """The page could not be fetched this time (a timeout, a refused, reset or dropped
    connection): the same fetch may work a moment later, so the planner retries it
    (``tools/retry.py``). Refusals (SSRF guard), invalid URLs and HTTP errors are plain
    :class:`ToolError` and are never retried."""

    retryable = True


@dataclass(frozen=True)
class FetchResult:
    url: str  # final URL, after redirects
    status_code: int
    content_type: str  # media type only, lower case ("text/html")
    charset: str | None
    body: bytes
    truncated: bool  # the body was cut at max_bytes


async def _read_capped(response: httpx.Response, max_bytes: int) -> tuple[bytes, bool]:
    chunks: list[bytes] = []
    size = 0
    async for chunk in response.aiter_bytes():
        chunks.append(chunk)
        size += len(chunk)
        if size >= max_bytes:
            return b"".join(chunks)[:max_bytes], True
    return b"".join(chunks), False


def pinned_request(
    client: httpx.Client | httpx.AsyncClient, url: httpx.URL, addresses: list[str] | None
) -> httpx.Request:
    """A GET of ``url`` that connects to the first checked address instead of resolving
    the host again, so a DNS answer that changes after the check (rebinding) cannot
    redirect the connection. The Host header and TLS SNI keep the real hostname, so
    virtual hosts and certificate verification work as usual."""
    host = url.host
    if not addresses or host in addresses:
        return client.build_request("GET", url)
    default_port = {"http": 80, "https": 443}.get(url.scheme)
    host_header = host if url.port in (None, default_port) else f"{host}:{url.port}"
    extensions = {"sni_hostname": host} if url.scheme == "https" else {}
    return client.build_request(
        "GET", url.copy_with(host=addresses[0]), headers={"Host": host_header}, extensions=extensions
    )


async def afetch_url(
    url: str,
    *,
    allow_private_network: bool,
    transport: httpx.AsyncBaseTransport | None = None,
    resolve: Resolver | None = None,
    max_bytes: int = MAX_BODY_BYTES,
    max_redirects: int = MAX_REDIRECTS,
    total_timeout_s: float = TOTAL_TIMEOUT_S,
) -> FetchResult:
    """GET ``url`` with the SSRF guard applied to the URL and to every redirect hop.

    Redirects are followed manually (at most ``max_redirects``) so each target is
    checked with :func:`check_url_allowed` *before* it is requested. The body is
    streamed and cut at ``max_bytes``. Any failure raises :class:`ToolError`; a timeout
    or connection failure raises its retryable subclass :class:`FetchUnavailableError`.

    ``total_timeout_s`` bounds the whole fetch (DNS, connect, headers, body, all hops):
    httpx's timeouts are per operation, so a server dripping one header line at a
    time would defeat them. The fetch is a coroutine on the caller's event loop (no
    thread); at the deadline it is cancelled, which closes its connection. Only the DNS
    look-up of the guard (blocking ``getaddrinfo``) runs in a daemon thread, abandoned
    at the deadline.
    """
    try:
        async with asyncio.timeout(total_timeout_s):
            return await _fetch(
                url, allow_private_network=allow_private_network, transport=transport, resolve=resolve,
                max_bytes=max_bytes, max_redirects=max_redirects, total_timeout_s=total_timeout_s,
            )  # fmt: skip
    except TimeoutError:
        raise FetchUnavailableError(f"Timed out fetching {url} (more than {total_timeout_s:g} s).") from None


def fetch_url(url: str, **options: Any) -> FetchResult:
    """:func:`afetch_url` for synchronous callers (a thread without a running event loop)."""
    return asyncio.run(afetch_url(url, **options))


_ssl_lock = threading.Lock()
_ssl_build: Future[ssl.SSLContext] | None = None


def ssl_context_build() -> Future[ssl.SSLContext]:
    """The certificate-verifying SSL context every fetch uses, built once per process on a
    thread of its own; every caller gets the same future, so concurrent first fetches wait
    on one build instead of holding a thread each (a failed build is tried again by the
    next caller).

    ``httpx.Client()`` builds a new one by default: loading the CA bundle costs ~70 ms of
    CPU per client, and parallel ``browse_url`` calls (one client each) queued on it, so
    eight 1-second pages took up to 1.6 s. Same settings as httpx's default
    (``verify=True``, ``SSL_CERT_FILE`` / ``SSL_CERT_DIR`` honoured)."""
    global _ssl_build
    with _ssl_lock:
        build = _ssl_build
        if build is None or (build.done() and build.exception() is not None):
            build = _ssl_build = Future()
            build.set_running_or_notify_cancel()  # a waiter's cancel does not stop the others' build
            threading.Thread(target=_build_ssl_context, args=(build,), name="smart-agent-ssl", daemon=True).start()
        return build


def _build_ssl_context(build: Future[ssl.SSLContext]) -> None:
    try:
        build.set_result(httpx.create_ssl_context())
    except BaseException as exc:  # handed to every waiter
        build.set_exception(exc)


async def _fetch(
    url: str,
    *,
    allow_private_network: bool,
    transport: httpx.AsyncBaseTransport | None,
    resolve: Resolver | None,
    max_bytes: int,
    max_redirects: int,
    total_timeout_s: float,
) -> FetchResult:
    timeout = httpx.Timeout(min(READ_TIMEOUT_S, total_timeout_s), connect=min(CONNECT_TIMEOUT_S, total_timeout_s))
    headers = {"User-Agent": USER_AGENT, "Accept": "text/html,text/plain,application/json;q=0.9,*/*;q=0.5"}
    current = url
    try:
        verify: ssl.SSLContext | bool = True
        if transport is None:  # built once, off the event loop (~70 ms of CPU)
            build = ssl_context_build()
            verify = build.result() if build.done() else await asyncio.wrap_future(build)
        async with httpx.AsyncClient(
            transport=transport, timeout=timeout, headers=headers, follow_redirects=False, verify=verify
        ) as client:
            target = httpx.URL(url)
            for _ in range(max_redirects + 1):
                current = str(target)
                addresses = await run_in_daemon_thread(
                    functools.partial(
                        check_url_allowed, current, allow_private_network=allow_private_network, resolve=resolve
                    ),
                    name="smart-agent-fetch-check",
                )
                response = await client.send(pinned_request(client, target, addresses), stream=True)
                try:
                    location = response.headers.get("location")
                    if response.is_redirect and location:
                        target = target.join(location)  # relative to the real URL, not the pinned one
                        continue
                    if response.status_code >= 400:
                        raise ToolError(f"HTTP {response.status_code} {response.reason_phrase} for {current}.")
                    body, truncated = await _read_capped(response, max_bytes)
                    content_type = response.headers.get("content-type", "").split(";", 1)[0].strip().lower()
                    charset = known_codec(response.charset_encoding)
                    return FetchResult(current, response.status_code, content_type, charset, body, truncated)
                finally:
                    await response.aclose()
    except httpx.TimeoutException:
        raise FetchUnavailableError(f"Timed out fetching {current}.") from None
    except httpx.InvalidURL as exc:
        raise ToolError(f"Invalid URL {current!r}: {exc}") from None
    except (httpx.NetworkError, httpx.RemoteProtocolError) as exc:  # refused, reset, closed without a reply
        raise FetchUnavailableError(f"Could not fetch {current}: {str(exc) or type(exc).__name__}") from None
    except httpx.HTTPError as exc:
        raise ToolError(f"Could not fetch {current}: {str(exc) or type(exc).__name__}") from None
    raise ToolError(f"Too many redirects (more than {max_redirects}) starting from {url}.")


# -- HTML to text: tools/html_text.py (linear time, capped input) ------------------


def _page_text(result: FetchResult) -> tuple[str, str]:
    ctype = result.content_type
    head = result.body[:512].lstrip().lower()
    if ctype in ("text/html", "application/xhtml+xml") or (
        not ctype and head.startswith((b"<!doctype html", b"<html"))
    ):
        return html_to_text(result.body, encoding=result.charset)
    textual = ctype.startswith("text/") or ctype.endswith(("json", "xml", "javascript", "yaml"))
    unknown = ctype in ("", "application/octet-stream")
    if not textual and not (unknown and b"\x00" not in result.body[:8192]):
        raise ToolError(f"{result.url} returned {ctype or 'binary content'}, which browse_url cannot read as text.")
    return "", result.body.decode(result.charset or "utf-8", errors="replace")


# -- browse_url -------------------------------------------------------------------
class BrowseUrlArgs(BaseModel):
    """Arguments of browse_url."""

    url: str = Field(description="The http(s) URL to fetch, e.g. 'https://example.com/page'.")
    max_chars: int = Field(
        default=DEFAULT_PAGE_CHARS, ge=100, le=MAX_PAGE_CHARS, description="Maximum characters of page text to return."
    )


async def _browse(url: str, max_chars: int = DEFAULT_PAGE_CHARS, *, runtime: ToolRuntime = None) -> str:  # type: ignore[assignment]
    """Fetch a web page and return its readable text (HTML converted to plain text).

    Plain-text and JSON responses are returned as they are. Long pages are cut at
    max_chars with a note. Private and local network addresses are refused.
    """
    max_chars = max(1, min(max_chars, MAX_PAGE_CHARS))
    run_timeout = context_field(getattr(runtime, "context", None), "tool_timeout_s")
    result = await afetch_url(
        url, allow_private_network=allow_private_network_of(runtime), transport=_transport, resolve=_resolve,
        total_timeout_s=min(TOTAL_TIMEOUT_S, run_timeout) if run_timeout else TOTAL_TIMEOUT_S,
    )
    # Up to 2 MB of HTML: converted in a thread so that the event loop (other tools, the
    # event stream) is not held up meanwhile.
    title, text = await run_in_daemon_thread(functools.partial(_page_text, result), name="smart-agent-html")
    notes = []
    if len(text) > max_chars:
        notes.append(f"[Truncated: showing the first {max_chars} of {len(text)} characters.]")
        text = text[:max_chars]
    if result.truncated:
        notes.append(
            f"[The response was larger than {MAX_BODY_BYTES // (1024 * 1024)} MB; only the beginning was read.]"
        )
    header = f"URL: {result.url}\n" + (f"Title: {title}\n" if title else "")
    return header + "\n" + (text or "[The page has no readable text.]") + "".join(f"\n\n{n}" for n in notes)


def _browse_sync(url: str, max_chars: int = DEFAULT_PAGE_CHARS, *, runtime: ToolRuntime = None) -> str:  # type: ignore[assignment]
    return asyncio.run(_browse(url, max_chars, runtime=runtime))


def same_page_url(url: Any) -> Any:
    """The page a URL fetches, for loop detection (``ToolMeta.canonical``): without its
    ``#fragment`` (never sent), the scheme and host in lower case, an empty path as ``/``.
    Anything else (the query, the path's case) may fetch another page and is kept; a value
    that is not a URL string comes back as it is."""
    if not isinstance(url, str):
        return url
    try:
        parts = urlsplit(url.strip())
    except ValueError:
        return url.partition("#")[0]
    netloc = parts.netloc if "@" in parts.netloc else parts.netloc.lower()  # (user names keep their case)
    return urlunsplit((parts.scheme.lower(), netloc, parts.path or "/", parts.query, ""))


def browse_effect(args: Mapping[str, Any]) -> dict[str, Any]:
    """browse_url's canonical effect: the page it fetches (``max_chars`` only cuts the text shown)."""
    return {"url": same_page_url(args.get("url"))}


#: An async tool (httpx's AsyncClient): parallel calls need no thread each, so a run's
#: ``max_parallel_tools`` is the only bound. ``invoke`` (no event loop) runs it to completion.
browse_url = StructuredTool.from_function(
    func=_browse_sync, coroutine=_browse, name="browse_url", description=_browse.__doc__ or "",
    args_schema=BrowseUrlArgs,
)  # fmt: skip


# -- web_search -------------------------------------------------------------------
T = TypeVar("T")
_URL_IN_PARENS = re.compile(r" ?\(https?://[^)]*\)")


def _ddgs_text(query: str, num_results: int, timeout_s: int) -> list[dict[str, Any]]:
    from ddgs import DDGS

    return DDGS(timeout=timeout_s).text(query, max_results=num_results)


#: Test hook: ``(query, num_results, request_timeout_s) -> [{"title", "href", "body"}, ...]``.
_search_backend: Callable[[str, int, int], list[dict[str, Any]]] = _ddgs_text


def _call_with_deadline(fn: Callable[[], T], deadline_s: float, *, name: str = "smart-agent-web-search") -> T:
    """Run ``fn`` in a daemon thread; raise TimeoutError if it does not finish in time."""
    values: list[T] = []
    errors: list[BaseException] = []

    def target() -> None:
        try:
            values.append(fn())
        except BaseException as exc:  # re-raised in the caller
            errors.append(exc)

    worker = threading.Thread(target=target, name=name, daemon=True)
    worker.start()
    worker.join(deadline_s)
    if worker.is_alive():
        raise TimeoutError(f"no answer within {deadline_s:g} s")
    if errors:
        raise errors[0]
    return values[0]


def _short(exc: BaseException, limit: int = 160) -> str:
    text = _URL_IN_PARENS.sub("", " ".join(str(exc).split())) or type(exc).__name__
    return clip(text, limit, "...")


def search_web(query: str, num_results: int = 5, *, deadline_s: float | None = None) -> list[dict[str, Any]]:
    """Search results as dicts with ``title``, ``href``, ``body`` (empty list: no results).

    The whole search is bounded by ``deadline_s`` (default ``SEARCH_DEADLINE_S``):
    ddgs's own timeout is per request and it may try several engines in turn.
    Failures raise :class:`ToolError`.
    """
    query = query.strip()
    if not query:
        raise ToolError("Empty search query.")
    deadline = SEARCH_DEADLINE_S if deadline_s is None else deadline_s
    try:
        return _call_with_deadline(lambda: _search_backend(query, num_results, SEARCH_REQUEST_TIMEOUT_S), deadline)
    except Exception as exc:
        if "no results found" in str(exc).lower():
            return []
        raise ToolError(f"web search unavailable: {_short(exc)} (no network?)") from None


def format_results(results: list[dict[str, Any]]) -> str:
    lines = []
    for i, r in enumerate(results, start=1):
        title = " ".join(str(r.get("title") or "(no title)").split())
        url = r.get("href") or r.get("url") or ""
        snippet = " ".join(str(r.get("body") or "").split())
        lines.append(f"{i}. {title} — {url}" + (f"\n   {snippet}" if snippet else ""))
    return "\n".join(lines)


class WebSearchArgs(BaseModel):
    """Arguments of web_search."""

    query: str = Field(description="What to search the web for, e.g. 'LangGraph ToolNode documentation'.")
    num_results: int = Field(default=5, ge=1, le=10, description="How many results to return (1-10).")


@tool("web_search", args_schema=WebSearchArgs)
def web_search(query: str, num_results: int = 5) -> str:
    """Search the web and return numbered results: title, URL and a snippet.

    Use browse_url on a result's URL to read the page.
    """
    results = search_web(query, max(1, min(num_results, 10)))
    if not results:
        return f"No results found for {query!r}."
    return format_results(results[:num_results])
