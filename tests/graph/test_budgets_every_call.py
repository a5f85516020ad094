"""Run budgets bound every model call of a run, not only the agent's turns: the two-phase
reasoning call and the summary call are made only when the budget leaves room for the turn
after them (else the turn answers / the digest replaces the summary), and both count in the
run's usage. Through the real langchain-openai client against the scripted server."""

from conftest import offered, openai_model, run_graph
from scripted_support import big_echo_registry

from smart_agent.config.context import Context
from smart_agent.graphs.agent import build_agent_graph
from smart_agent.history.transcript import SUMMARY_SYSTEM_PROMPT
from smart_agent.models.usage import BUDGET_SPENT_ANSWER
from smart_agent.nodes.reasoning import REASONING
from smart_agent.testing.scripted_server import text, tool_call, tool_calls
from smart_agent.tools.calculator import calculator
from smart_agent.tools.registry import ToolRegistry


def calculator_only():
    reg = ToolRegistry()
    reg.register(calculator)
    return reg


def thinker(req):
    """Reasons whenever offered the reasoning tool, calls the calculator when offered it, else answers."""
    names = offered(req)
    if names == [REASONING]:
        return tool_call(REASONING, {"situation": "I must add.", "plan": ["calculator 2+2"], "done": False})
    if names:
        return tool_call("calculator", {"expression": "2+2"})
    return text("It is 4.")


async def test_two_phase_reasoning_call_is_bounded_by_the_token_budget(scripted_server):
    srv = scripted_server(responder=thinker)
    graph = build_agent_graph(model=openai_model(srv), registry=calculator_only())
    # A turn here is about 270 tokens in + 256 allowed out: the budget holds one turn but not a
    # reasoning call and then a turn of the same size, so the reasoning call would be its last.
    events = []
    final = await run_graph(
        graph, "What is 2+2?", Context(memory=False, reasoning="two_phase", max_tokens=800), events=events
    )
    assert final["answer"] == "It is 4."
    assert len(srv.requests) == 1 and offered(srv.requests[0]) == []  # no reasoning call: the turn answered
    assert final["usage"]["model_calls"] == 1
    assert final["usage"]["input_tokens"] + final["usage"]["output_tokens"] <= 800
    assert [e["reason"] for e in events if e["event"] == "budget" and e["action"] == "finalize"] == ["tokens"]


async def test_two_phase_reasoning_calls_count_and_respect_the_call_budget(scripted_server):
    srv = scripted_server(responder=thinker)
    graph = build_agent_graph(model=openai_model(srv), registry=calculator_only())
    final = await run_graph(
        graph, "What is 2+2?",
        Context(memory=False, reasoning="two_phase", max_model_calls=3, loop_limit=0, max_tool_calls=50),
    )
    # reasoning, action (calculator), then the last call answers without tools
    assert [offered(r) for r in srv.requests] == [[REASONING], ["calculator"], []]
    assert final["answer"] == "It is 4." and final["usage"]["model_calls"] == 3


# --------------------------------------------------------------------------- summaries
def is_summary_request(req) -> bool:
    first = (req.get("messages") or [{}])[0]
    return first.get("role") == "system" and str(first.get("content", "")).startswith(SUMMARY_SYSTEM_PROMPT[:40])


def fetcher(req):
    """Fetches two records a turn with a long comment (so compaction needs a model summary)."""
    if is_summary_request(req):
        return text("Summary: records fetched; all fine.")
    if not req.get("tools"):
        return text("Fetched what I could.")
    t = sum(1 for m in req["messages"] if m["role"] == "assistant") + 1
    return tool_calls(
        [("fetch", {"key": f"k{t}a"}), ("fetch", {"key": f"k{t}b"})],
        content=f"Turn {t}: I will now fetch two more records because the analysis needs them. " * 6,
    )


def summary_ctx(**kw):
    return Context(memory=False, context_token_limit=2000, archive_threshold_chars=0, loop_limit=0,
                   max_tool_calls=100, **kw)


async def test_a_summary_call_is_never_the_budgets_last_call(scripted_server):
    # without a budget: find the request that is the first summary
    srv = scripted_server(responder=fetcher)
    graph = build_agent_graph(model=openai_model(srv), registry=big_echo_registry())
    await run_graph(graph, "Fetch the records.", summary_ctx(max_model_calls=12))
    first = next(i for i, r in enumerate(srv.requests) if is_summary_request(r))
    assert first >= 1
    # with the budget ending just there, the summary would be the last call: the digest replaces it
    srv.reset()
    srv.responder = fetcher
    events = []
    final = await run_graph(graph, "Fetch the records.", summary_ctx(max_model_calls=first + 1), events=events)
    assert len(srv.requests) == first + 1 and not any(is_summary_request(r) for r in srv.requests)
    assert "tools" not in srv.requests[-1]  # the last call is the agent's answer
    assert final["answer"] == "Fetched what I could." and final["answer"] != BUDGET_SPENT_ANSWER
    summ = [e for e in events if e["event"] == "summarization" and e["action"] == "summarize"]
    assert summ and summ[-1]["strategy"] == "budget_digest"
    assert final["usage"]["model_calls"] == first + 1


async def test_summary_calls_count_in_the_runs_usage(scripted_server):
    srv = scripted_server(responder=fetcher)
    graph = build_agent_graph(model=openai_model(srv), registry=big_echo_registry())
    final = await run_graph(graph, "Fetch the records.", summary_ctx(max_model_calls=12))
    summaries = sum(1 for r in srv.requests if is_summary_request(r))
    assert summaries >= 1 and final["usage"]["model_calls"] == len(srv.requests) == 12
