"""The rule-based scripted model behind the bundled eval suite ``evals/smoke.yaml``: a
``ScriptedOpenAIServer`` responder that looks only at the request it is given (the task,
the tools offered, the tool results so far) and plays each case's part. Its cassettes
(``evals/cassettes/``) are recorded against it::

    python -m smart_agent.testing.eval_smoke evals/smoke.yaml evals/cassettes

(re-records every case: the server runs in this process, ``smart-agent eval --record``
runs against it). ``smart-agent eval evals/smoke.yaml --replay evals/cassettes`` then
replays them with no server at all."""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Mapping
from typing import Any

from ..evaluation.judge import JUDGE_PROMPT
from ..nodes.dual import DECIDE
from ..nodes.fleet import AGGREGATE_SYSTEM, SUBMIT_SUBTASKS
from ..nodes.reasoning import REASONING
from .script import message_text, text, tool_call, tool_call_names

__all__ = ["smoke_responder"]

Request = Mapping[str, Any]


def _offered(req: Request) -> set[str]:
    return {str((t.get("function") or {}).get("name")) for t in req.get("tools") or []}


def _users(req: Request) -> list[str]:
    return [message_text(m.get("content")) for m in req.get("messages") or [] if m.get("role") == "user"]


def _system(req: Request) -> str:
    return " ".join(message_text(m.get("content")) for m in req.get("messages") or [] if m.get("role") == "system")


def _since_last_user(req: Request) -> list[tuple[str, str]]:
    """The tool results after the last user message (this turn's)."""
    messages = list(req.get("messages") or [])
    last_user = max((i for i, m in enumerate(messages) if m.get("role") == "user"), default=-1)
    names = tool_call_names(req)
    return [(names.get(str(m.get("tool_call_id") or ""), ""), message_text(m.get("content")))
            for m in messages[last_user + 1:] if m.get("role") == "tool"]


def _judge(req: Request) -> dict[str, Any]:
    answer = _users(req)[-1].rpartition("Answer:")[2]
    score = 0.9 if "pleasure" in answer else 0.1
    return text(json.dumps({"score": score, "reason": "polite and warm" if score > 0.5 else "not polite"}))


def _counting(req: Request) -> dict[str, Any]:
    """The limit cases: count with the calculator while tools are offered."""
    done = _since_last_user(req)
    if "calculator" in _offered(req):
        return tool_call("calculator", {"expression": f"{len(done)}+1"})
    return text(f"I stopped after {len(done)} calculations.")


def _agent(task: str, req: Request) -> dict[str, Any]:  # one rule per case
    offered, done = _offered(req), _since_last_user(req)
    last = done[-1][1] if done else ""
    if "37*43" in task:
        return text(f"37*43 = {last}") if done else tool_call("calculator", {"expression": "37*43"})
    if "smoke.txt" in task:
        return text("Saved smoke to smoke.txt.") if done else tool_call(
            "write_file", {"path": "smoke.txt", "content": "smoke\n"})
    if "launch code" in task:
        found = re.search(r"launch code is (\d+)", last)
        return text(f"The launch code is {found.group(1)}." if found else "I could not find it.") if done else (
            tool_call("read_file", {"path": "notes.txt"}))
    if "Count" in task:
        return _counting(req)
    if "SECRET" in task:
        if not done:
            return tool_call("read_file", {"path": "big.txt"})
        archived = re.search(r"ex_[0-9a-f]+", last)
        if done[-1][0] == "read_file" and archived:
            return tool_call("get_tool_response", {"execution_id": archived.group(0), "offset": 2800})
        found = re.search(r"SECRET=(\w+)", last)
        return text(f"The secret is {found.group(1)}." if found else "No secret found.")
    if "picnic" in task:
        return text("Todo list ready: buy bread, pack the basket.") if done else tool_call(
            "manage_todo_list", {"add": ["buy bread", "pack the basket"]})
    if "capital of France" in task:
        return text(json.dumps({"city": "Paris", "country": "France"}))
    if "favourite colour is teal" in task:
        return text("I will remember that your favourite colour is teal.") if done else tool_call(
            "remember", {"text": "The user's favourite colour is teal."})
    if "6*7" in task:  # the team: triage hands over to math, math computes
        if any(n.startswith("transfer_to_math") for n in offered):
            return tool_call("transfer_to_math", {})
        computed = [c for n, c in done if n == "calculator"]
        return text(f"6*7 = {computed[-1]}") if computed else tool_call("calculator", {"expression": "6*7"})
    if "approved.txt" in task or "rejected.txt" in task:
        name = "approved.txt" if "approved.txt" in task else "rejected.txt"
        if not done:
            return tool_call("write_file", {"path": name, "content": "ok\n"})
        if "rejected" in last:  # (the rejection names the call's id: not echoed, so replays compare equal)
            return text(f"I did not save {name}: the user rejected the write.")
        return text(f"Saved {name}.")
    if "favourite colour, then" in task:
        return text(f"Your favourite colour is {last.strip()}.") if done else tool_call(
            "ask_user", {"question": "What is your favourite colour?"})
    if "2*21" in task:
        if REASONING in offered:
            return tool_call(REASONING, {"situation": "Have 42." if done else "Need arithmetic.",
                                         "plan": [] if done else ["calculator: 2*21"], "done": bool(done)})
        return text(f"2*21 = {last}") if done else tool_call("calculator", {"expression": "2*21"})
    if "politely" in task:
        return text("Hello! It is a pleasure to meet you.")
    return text("I do not know this task.")


def _conversation(req: Request) -> dict[str, Any]:
    users = _users(req)
    if len(users) == 1:
        return text("Nice to meet you, Ada.")
    named = [u for u in users[:-1] if "My name is" in u]
    return text(f"Your name is {named[-1].split('My name is', 1)[1].strip(' .')}." if named else "I do not know.")


def _planner(req: Request) -> dict[str, Any]:
    if "submit_plan" in _offered(req):
        return tool_call("submit_plan", {"steps": [
            {"id": "a", "tool": "calculator", "args": {"expression": "12*12"}},
            {"id": "b", "tool": "write_file", "args": {"path": "square.txt", "content": "${a}"}},
        ]})
    trace = json.dumps(req.get("messages"))
    return text("12*12 = 144, saved to square.txt." if "144" in trace else "The plan did not compute it.")


def _fleet(req: Request) -> dict[str, Any]:
    messages = req.get("messages") or []
    last = message_text(messages[-1].get("content")) if messages else ""
    if AGGREGATE_SYSTEM in _system(req):
        return text("aggregated: " + ",".join(w for w in ("one", "two") if f"Result: {w}" in last))
    if SUBMIT_SUBTASKS in _offered(req):
        subtasks = [{"id": "x", "task": "say one"}, {"id": "y", "task": "say two"}]
        return tool_call(SUBMIT_SUBTASKS, {"subtasks": subtasks})
    return text("one" if "say one" in last else "two" if "say two" in last else "unexpected")


def smoke_responder(request: dict[str, Any]) -> dict[str, Any]:
    """The next reply for any request of an ``evals/smoke.yaml`` case."""
    users = _users(request)
    task = users[0] if users else ""
    if JUDGE_PROMPT in _system(request):
        return _judge(request)
    if DECIDE in _offered(request):
        thoughts = "brainstorm" in json.dumps(request.get("messages"))
        return tool_call(DECIDE, {"action": "final", "answer": "Hello, Ada."} if thoughts else
                         {"action": "brainstorm", "thought": "A greeting needs no tools."})
    if "(fleet)" in task or AGGREGATE_SYSTEM in _system(request) or task in ("say one", "say two"):
        return _fleet(request)
    if "12*12" in task:
        return _planner(request)
    if "My name is" in task:
        return _conversation(request)
    return _agent(task, request)


def main(argv: list[str] | None = None) -> int:  # pragma: no cover - the recording script
    """Record every case of ``SUITE`` into ``CASSETTES`` against this responder (a
    ``smart-agent eval --record`` process against the scripted server run here)."""
    import os
    import shutil
    import subprocess

    from .scripted_server import ScriptedOpenAIServer

    suite, cassettes, *rest = argv if argv is not None else sys.argv[1:]
    shutil.rmtree(cassettes, ignore_errors=True)
    with ScriptedOpenAIServer(responder=smoke_responder, model="scripted-smoke") as server:
        env = {**os.environ, "OPENAI_BASE_URL": server.base_url, "OPENAI_API_KEY": "scripted-smoke-key",
               "SMART_AGENT_MODEL": "openai:scripted-smoke"}
        cmd = [sys.executable, "-m", "smart_agent.cli", "eval", suite, "--record", cassettes, *rest]
        return subprocess.run(cmd, env=env, check=False).returncode


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
