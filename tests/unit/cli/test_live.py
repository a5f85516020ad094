"""The terminal display (cli/live.py) fed stream parts by hand: which model text streams, what
the status line says, and that nothing is shown twice."""

from __future__ import annotations

import io

import pytest
from langchain_core.messages import AIMessageChunk

from smart_agent.cli.live import Lines, LiveLines, make_display
from smart_agent.cli.render import RunSummary

pytestmark = pytest.mark.unit


class Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def token(text: str, node: str = "agent", ns: str = "agent:t1", **meta) -> tuple[str, tuple]:
    return "messages", (AIMessageChunk(content=text), {"langgraph_node": node, "langgraph_checkpoint_ns": ns, **meta})


def test_only_a_terminal_without_json_or_quiet_gets_the_live_display():
    assert isinstance(make_display(Tty(), RunSummary()), LiveLines)
    assert type(make_display(io.StringIO(), RunSummary())) is Lines  # a pipe
    assert type(make_display(Tty(), RunSummary(), as_json=True)) is Lines
    assert type(make_display(Tty(), RunSummary(), quiet=True)) is Lines
    assert type(make_display(Tty(), RunSummary(), answer_stream=io.StringIO())) is Lines  # chat > file


def test_answer_nodes_stream_and_other_model_text_does_not():
    out = Tty()
    live = LiveLines(out, RunSummary())
    live.on_progress("tasks", {"id": "t0", "name": "plan", "input": {}, "triggers": []})
    live.on_progress(*token('{"steps": []}', node="plan", ns="plan:t0"))  # a plan: not an answer
    live.on_progress("tasks", {"id": "t0", "name": "plan", "result": {}, "error": None})
    live.on_progress(*token("secret", smart_agent_depth=1))  # a sub-agent's model call
    live.on_progress("tasks", {"id": "t1", "name": "agent", "input": {}, "triggers": []})
    for word in ("It ", "is ", "42."):
        live.on_progress(*token(word))
    live.on_event({"event": "usage", "turn": 1, "input_tokens": 3, "output_tokens": 2})
    live.on_progress("tasks", {"id": "t1", "name": "agent", "result": {}, "error": None})
    live.close()
    text = out.getvalue()
    assert "It is 42.\n  · model turn 1: 3 tokens in, 2 out" in text  # the line ended before the next one
    assert "steps" not in text and "secret" not in text
    assert live.answer_shown({"answer": "It is 42."}) and not live.answer_shown({"answer": "Other."})


def test_text_beside_tool_calls_is_not_repeated_when_it_streamed():
    out = Tty()
    summary = RunSummary()
    live = LiveLines(out, summary)
    live.on_progress(*token("Let me check."))
    live.on_event({"event": "model_text", "text": "Let me check.", "turn": 1})
    live.on_event({"event": "model_text", "text": "Worker note.", "turn": 1, "agent": "w1"})  # a worker's: shown
    live.close()
    assert out.getvalue().count("Let me check.") == 1
    assert "[w1] 💬 Worker note." in out.getvalue()
    assert [e["event"] for e in summary.events] == ["model_text", "model_text"]  # both counted


def test_status_names_the_running_tool_and_is_erased():
    out = Tty()
    live = LiveLines(out, RunSummary())
    live.on_event({"event": "tool_call", "id": "c1", "name": "browse_url", "args": {}})
    assert [label for label, _since in live.activities.values()] == ["browse_url running"]
    live.on_event({"event": "tool_result", "id": "c1", "name": "browse_url", "ok": True, "preview": "x"})
    assert not live.activities and live._live is None  # the spinner stopped with the last activity
    live.on_event({"event": "step_start", "step": "s1", "tool": "grep", "agent": "a1"})
    assert [label for label, _since in live.activities.values()] == ["[a1] step s1: grep"]
    live.on_event({"event": "step_start", "step": "w2", "task": "say two"})  # a fleet worker
    assert [label for label, _since in live.activities.values()][-1] == "step w2: say two"
    live.close()
    assert live._live is None and not live.activities
