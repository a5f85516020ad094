"""Attack over `langgraph dev` + `langgraph_sdk`: a context dict whose values have the
wrong type. LangGraph builds the context schema from the dict (``Context(**context)``,
langgraph.pregel.main._coerce_context), so the run must fail with the validation
message before any model call or tool - "false" must never mean True."""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from smart_agent.testing.scripted_server import text, tool_call

pytestmark = pytest.mark.e2e


@pytest.fixture
def loopback_page():
    """A page on 127.0.0.1 that records every request it gets."""
    hits: list[str] = []

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):
            hits.append(self.path)
            body = b"internal secret"
            self.send_response(200)
            self.send_header("Content-Type", "text/plain")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/secret", hits
    server.shutdown()
    server.server_close()


async def run_with_context(url: str, context: dict) -> dict:
    from langgraph_sdk import get_client

    client = get_client(url=url)
    thread = await client.threads.create()
    result = await client.runs.wait(
        thread["thread_id"], "agent", input={"task": "Read the page."}, context=context, raise_error=False
    )
    assert isinstance(result, dict), result
    return result


@pytest.mark.parametrize("false_text", ["false", "no", "0"])
async def test_false_as_text_does_not_open_the_private_network(dev_server, loopback_page, false_text):
    url, srv = dev_server
    page, hits = loopback_page
    srv.reset([tool_call("browse_url", {"url": page}), text("The page says: internal secret")])
    result = await run_with_context(url, {"model": "openai:scripted-model", "allow_private_network": false_text})
    assert hits == [], "the loopback page was fetched"
    assert srv.requests == [], "the model was called although the context is invalid"
    error = result.get("__error__") or {}
    assert "allow_private_network must be true or false" in str(error.get("message")), result


async def test_a_boolean_is_not_an_integer(dev_server):
    url, srv = dev_server
    srv.reset([tool_call("calculator", {"expression": "1+1"}), text("2")])
    result = await run_with_context(url, {"model": "openai:scripted-model", "max_tool_calls": True})
    assert srv.requests == []
    assert "max_tool_calls must be an integer (got True)" in str((result.get("__error__") or {}).get("message")), result


async def test_a_real_false_still_refuses_and_a_valid_context_still_runs(dev_server, loopback_page):
    url, srv = dev_server
    page, hits = loopback_page
    srv.reset([tool_call("browse_url", {"url": page}), lambda req: text(req["messages"][-1]["content"][:200])])
    result = await run_with_context(url, {"model": "openai:scripted-model", "allow_private_network": False})
    assert hits == []
    assert "Refused" in result["answer"] and "private/loopback" in result["answer"], result
