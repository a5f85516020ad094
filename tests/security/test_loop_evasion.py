"""Attack: a model that evades loop detection (``loop_limit``) by varying its calls.

Before: only the same call with the same arguments, made again right after itself, counted.
A model alternating two calls (A, B, A, B...), varying a URL's ``#fragment`` or ``max_chars``
(or an argument the tool ignores), or repeating a call past the limit and then making another
call in the same turn, ran until the tool budget was spent (``max_tool_calls``: here 20 or 30).
Now a cycle of 1 to 4 calls made ``loop_limit`` times in a row is detected (a notice, then the
run is finalized at its next call), calls are compared by their tool's canonical effect
(``ToolMeta.canonical``: a URL without its fragment, without the arguments that only shape the
answer), and a call past the limit finalizes the run whatever the turn's later calls. Distinct
calls are never flagged. Through the real OpenAI client against the scripted server; the counts
are the tool executions (and a local web server's hits), not times.
"""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from conftest import loop_context, openai_model, run_graph

from smart_agent.graphs.agent import build_agent_graph
from smart_agent.models.prompts import LOOP_CYCLE_FINALIZE_NOTICE, LOOP_CYCLE_NOTICE
from smart_agent.testing.scripted_server import text, tool_call, tool_calls

pytestmark = pytest.mark.graph

BUDGET = 30  # the tool budget: what alone stopped each attack before


class CountingServer:
    """A local web page that counts its fetches."""

    def __init__(self) -> None:
        self.hits = 0
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args) -> None:
                pass

            def do_GET(self) -> None:
                outer.hits += 1
                body = b"<html><title>page</title><body>" + b"word " * 400 + b"</body></html>"
                self.send_response(200)
                self.send_header("Content-Type", "text/html; charset=utf-8")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"

    def __enter__(self) -> CountingServer:
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def cycling(calls):
    """A model that makes ``calls(n)`` at its n-th tool turn while tools are offered (n from 0),
    and answers once they are not (a finalized run)."""

    def respond(req):
        if not req.get("tools"):
            return text("done")
        turn = sum(1 for m in req["messages"] if m["role"] == "assistant")
        return calls(turn)

    return respond


def executed(events) -> list[dict]:
    return [e for e in events if e["event"] == "tool_result" and e.get("error") != "skipped_loop"]


def loops(events) -> list[tuple]:
    return [(e["action"], e["repeats"], e.get("cycle")) for e in events if e["event"] == "loop_detected"]


async def run(srv, workspace, **kw):
    kw.setdefault("max_tool_calls", BUDGET)
    kw.setdefault("loop_limit", 3)
    events: list = []
    graph = build_agent_graph(model=openai_model(srv))
    final = await run_graph(graph, "go", loop_context(workspace, **kw), events=events)
    return final, events


A = ("calculator", {"expression": "6*7"})
B = ("list_files", {"path": "."})
C = ("glob", {"pattern": "*.txt"})


async def test_alternating_two_calls_is_a_cycle(scripted_server, workspace):
    srv = scripted_server(responder=cycling(lambda n: tool_call(*(A if n % 2 == 0 else B))))
    final, events = await run(srv, workspace)
    # A,B three times: a notice; the next call of the cycle (A) finalizes: 7 runs, not 30.
    assert len(executed(events)) == 7 and final["tool_calls_made"] == 7
    assert loops(events) == [("notice", 3, ["calculator", "list_files"]), ("finalize", 4, ["calculator", "list_files"])]
    notice = LOOP_CYCLE_NOTICE.format(period=2, tools="calculator, list_files", count=3)
    assert [notice in r["messages"][0]["content"] for r in srv.requests] == [False] * 6 + [True, False]
    final_notice = LOOP_CYCLE_FINALIZE_NOTICE.format(period=2, tools="calculator, list_files", count=4)
    assert final_notice in srv.requests[-1]["messages"][0]["content"] and "tools" not in srv.requests[-1]
    assert final["answer"] == "done"


async def test_a_cycle_of_three_calls(scripted_server, workspace):
    srv = scripted_server(responder=cycling(lambda n: tool_call(*(A, B, C)[n % 3])))
    final, events = await run(srv, workspace)
    assert final["tool_calls_made"] == 10  # 3 x 3, and one more
    assert [action for action, *_ in loops(events)] == ["notice", "finalize"]
    assert loops(events)[0] == ("notice", 3, ["calculator", "list_files", "glob"])


async def test_one_turn_alternating_runs_the_cycle_at_most_once_past_the_limit(scripted_server, workspace):
    srv = scripted_server(responder=cycling(lambda n: tool_calls([A, B] * 6)))
    final, events = await run(srv, workspace, max_tool_calls_per_turn=20)
    results = [e for e in events if e["event"] == "tool_result"]
    assert [e["error"] == "skipped_loop" for e in results] == [False] * 7 + [True] * 5
    assert final["tool_calls_made"] == 7 and final["answer"] == "done"


async def test_a_call_past_the_limit_finalizes_even_when_the_turn_goes_on_with_another(scripted_server, workspace):
    # Each turn: A five times (the 5th is not run), then B, which used to start the count over.
    srv = scripted_server(responder=cycling(lambda n: tool_calls([A] * 5 + [B])))
    final, events = await run(srv, workspace, max_tool_calls_per_turn=20)
    assert final["tool_calls_made"] == 5 and len(srv.requests) == 2 and final["answer"] == "done"
    assert [e["action"] for e in events if e["event"] == "loop_detected"] == ["finalize"]


@pytest.mark.parametrize(
    "vary",
    [
        pytest.param(lambda url, n: {"url": f"{url}/page#part{n}"}, id="fragment"),
        pytest.param(lambda url, n: {"url": f"{url}/page", "max_chars": 1000 + n}, id="max_chars"),
        pytest.param(lambda url, n: {"url": f"{url}/page", "nonce": n}, id="ignored-argument"),
    ],
)
async def test_browse_url_variations_of_one_page_are_the_same_call(scripted_server, workspace, vary):
    with CountingServer() as page:
        srv = scripted_server(responder=cycling(lambda n: tool_call("browse_url", vary(page.url, n))))
        final, events = await run(srv, workspace, allow_private_network=True, max_tool_calls=20)
        hits = page.hits
    assert hits == 4 and final["tool_calls_made"] == 4  # loop_limit + 1 fetches, not 20
    assert all(e["ok"] for e in executed(events))
    assert [(a, r) for a, r, _ in loops(events)] == [("notice", 3), ("finalize", 4)]


@pytest.mark.parametrize("limit", [3, 1])
async def test_distinct_calls_are_not_a_loop(scripted_server, workspace, limit):
    (workspace / "a.txt").write_text("alpha\n" * 50)
    distinct = [
        ("calculator", {"expression": f"{n}*{n}"}) for n in range(6)
    ] + [
        ("read_file", {"path": "a.txt", "offset": 1 + 10 * n, "limit": 10}) for n in range(4)  # windows: other reads
    ] + [B, ("glob", {"pattern": "*.md"}), ("glob", {"pattern": "*.txt"}), ("list_files", {"path": ".."})]

    def model(req):
        turn = sum(1 for m in req["messages"] if m["role"] == "assistant")
        return tool_call(*distinct[turn]) if turn < len(distinct) else text("all done")

    srv = scripted_server(responder=model)
    final, events = await run(srv, workspace, loop_limit=limit)
    assert final["tool_calls_made"] == len(distinct) == 14 and final["answer"] == "all done"
    # (loop_limit 1: "the same call once in a row" is the limit, so each call has its notice)
    assert all(a == "notice" and r == 1 for a, r, _ in loops(events)) and (limit == 1 or loops(events) == [])
    assert not any(e["event"] == "tool_limit" for e in events)


def test_canonical_effects_keep_what_changes_the_effect():
    from smart_agent.policies.loop_guard import call_signature
    from smart_agent.tools.builtins import default_registry
    from smart_agent.tools.web import same_page_url

    registry = default_registry(entry_points=False)

    def sig(name, **args):
        return call_signature({"name": name, "args": args}, registry.meta(name).canonical)

    assert same_page_url("HTTP://Example.COM#top") == "http://example.com/"
    assert same_page_url("http://user:Pw@example.com/A?q=1#x") == "http://user:Pw@example.com/A?q=1"
    assert same_page_url("http://[::1") == "http://[::1" and same_page_url(3) == 3  # not a URL: as it is
    assert sig("browse_url", url="https://a.example/p#1") == sig("browse_url", url="https://a.example/p", max_chars=500)
    assert sig("browse_url", url="https://a.example/p?x=1") != sig("browse_url", url="https://a.example/p?x=2")
    assert sig("read_file", path="a.txt") == sig("read_file", path="a.txt", offset=1, line_numbers=True)
    assert sig("read_file", path="a.txt", offset=10) != sig("read_file", path="a.txt", offset=20)  # another window
    assert sig("read_file", path="a.txt", limit=5) != sig("read_file", path="a.txt")
    assert sig("grep", pattern="x", max_results=5) == sig("grep", pattern="x", path=".")
    assert sig("grep", pattern="x", ignore_case=True) != sig("grep", pattern="x")
    assert sig("web_search", query="q", num_results=3) == sig("web_search", query="q")
    assert sig("write_file", path="a", content="1") != sig("write_file", path="a", content="2")
    assert sig("browse_url", url=["not", "a", "url"]) == sig("browse_url", url=["not", "a", "url"])
