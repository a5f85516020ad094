"""Attack: ``browse_url`` against a server that drips one header line every 3 s, and
HTML pages built to make the HTML-to-text conversion slow.

Before: httpx's timeouts are per read, so the drip never tripped them and the
fetch never returned; the BeautifulSoup conversion was quadratic (a 1.9 MB flat
page took minutes, 200,000 nested ``<div>`` too). Now the whole fetch has one
deadline (the lower of 20 s and the run's ``tool_timeout_s``), and the
conversion is one streaming pass over at most 2 MB."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest

from security.hostile_http import SlowHeaderServer
from smart_agent.config.context import Context
from smart_agent.tools.html_text import MAX_HTML_CHARS, html_to_text
from smart_agent.tools.invoke import run_tool
from smart_agent.tools.web import browse_url

GUARD_S = 60  # a regression fails here instead of hanging the suite


def in_thread(fn):
    """``fn()`` in a daemon thread, waited for at most GUARD_S seconds."""
    box: dict = {}
    worker = threading.Thread(target=lambda: box.update(value=fn()), daemon=True)
    worker.start()
    worker.join(GUARD_S)
    assert not worker.is_alive(), f"still running after {GUARD_S} s"
    return box["value"]


@pytest.mark.graph
def test_browse_url_gives_up_on_a_slow_drip_header_server():
    deadline_s = 4.0
    ctx = Context(allow_private_network=True, tool_timeout_s=deadline_s)  # loopback; the run's tool timeout
    with SlowHeaderServer(interval_s=3.0) as srv:

        def browse():
            start = time.monotonic()
            # No timeout in run_tool: only browse_url's own deadline can end this.
            outcome = asyncio.run(run_tool(browse_url, {"url": f"{srv.url}/page"}, call_id="c1", context=ctx))
            return outcome, time.monotonic() - start

        outcome, elapsed = in_thread(browse)
        dripped = srv.header_lines_sent
    assert dripped >= 1  # the server was dripping headers when the fetch gave up
    assert not outcome.ok
    assert outcome.content == f"Tool 'browse_url' failed: Timed out fetching {srv.url}/page (more than 4 s)."
    assert elapsed <= deadline_s + 2  # the deadline is the behaviour under test


@pytest.mark.unit
def test_flat_page_of_1_9_mb_converts_in_one_pass():
    n = 68_000
    page = "<html><head><title>Flat</title><style>p{}</style></head><body>" + "".join(
        f"<p>para {i} &amp; text</p>" for i in range(n)
    ) + "</body></html>"
    assert 1_800_000 < len(page.encode()) < MAX_HTML_CHARS
    title, text = in_thread(lambda: html_to_text(page.encode(), encoding="utf-8"))
    lines = text.splitlines()
    assert title == "Flat"
    assert len(lines) == n
    assert (lines[0], lines[-1]) == ("para 0 & text", f"para {n - 1} & text")


@pytest.mark.unit
def test_200k_nested_divs_convert_in_one_pass():
    depth = 200_000
    page = "<html><body>" + "<div>" * depth + "deep <b>inside</b>" + "</div>" * depth + "<p>after</p></body></html>"
    title, text = in_thread(lambda: html_to_text(page))
    assert len(page) > MAX_HTML_CHARS  # the closing tags and "after" lie beyond the cap
    assert (title, text) == ("", "deep inside")


@pytest.mark.unit
def test_html_beyond_the_cap_is_not_read():
    page = "<p>start</p>" + "<p>filler</p>" * (MAX_HTML_CHARS // 13) + "<p>the end</p>"
    assert len(page) > MAX_HTML_CHARS
    _title, text = in_thread(lambda: html_to_text(page))
    lines = text.splitlines()
    assert lines[0] == "start" and "the end" not in lines
