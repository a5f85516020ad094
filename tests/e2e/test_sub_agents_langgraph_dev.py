"""`langgraph dev` serving the agent graph with the server's SMART_AGENT_SUB_AGENT_TOOLS on and its own
skills folder, through langgraph_sdk against the scripted server: a background child's answer reaches the
agent when it checks, a task still running when the run answers is cancelled with the run (the next run is
served at once), the run's model calls count the child's; the first request lists the server's skills and
the workspace's AGENTS.md, and read_skill opens one (every read off the server's event loop)."""

from __future__ import annotations

import re
import time

import pytest

from smart_agent.testing.scripted_server import text, tool_call


def is_child(req) -> bool:
    return next(m["content"] for m in req["messages"] if m["role"] == "user").startswith("CHILD")


@pytest.fixture
def dev_server_env(tmp_path):
    folder = tmp_path / "server-skills" / "triage"
    folder.mkdir(parents=True)
    (folder / "SKILL.md").write_text("---\nname: triage\ndescription: Sort incoming tickets.\n---\nTRIAGE-BODY\n")
    (tmp_path / "AGENTS.md").write_text("SERVED-PROJECT-RULE\n")  # the server's workspace is tmp_path
    return {"SMART_AGENT_SUB_AGENT_TOOLS": "true", "SMART_AGENT_SKILLS": str(tmp_path / "server-skills")}


def background_responder(child_reply):
    def respond(req):
        if is_child(req):
            return child_reply
        last = req["messages"][-1]
        if last["role"] == "user":
            return tool_call("start_sub_agent", {"task": f"CHILD: {last['content']}"})
        if last["content"].startswith("Started background task") and "wait" in req["messages"][1]["content"]:
            found = re.search(r"task-[0-9a-f]{8}", last["content"]).group(0)
            return tool_call("check_sub_agent", {"task_id": found, "wait_s": 20})
        return text(f"final: {last['content']}")

    return respond


async def test_background_sub_agents_over_langgraph_dev(dev_server):
    from langgraph_sdk import get_client

    url, srv = dev_server
    client = get_client(url=url)
    context = {"model": "openai:scripted-model"}
    srv.responder = background_responder(text("CHILD ANSWER 7"))
    thread = await client.threads.create()
    result = await client.runs.wait(thread["thread_id"], "agent", input={"task": "wait for it"}, context=context)
    assert "finished. The helper's answer:\nCHILD ANSWER 7" in result["answer"], result
    assert result["usage"]["model_calls"] == len(srv.requests) == 4
    names = [t["function"]["name"] for t in srv.requests[0]["tools"]]
    assert {"start_sub_agent", "check_sub_agent", "cancel_sub_agent", "sub_agent"} <= set(names)

    # a task still running when the agent answers ends with the run; the server goes on at once
    srv.reset()
    srv.responder = background_responder(text("much too late", delay_s=60))
    began = time.monotonic()
    thread = await client.threads.create()
    result = await client.runs.wait(thread["thread_id"], "agent", input={"task": "go on"}, context=context)
    assert result["answer"].startswith("final: Started background task")
    srv.reset([text("next run")])
    again = await client.runs.wait(thread["thread_id"], "agent", input={"task": "hello"}, context=context)
    assert again["answer"] == "next run" and time.monotonic() - began < 40


async def test_served_skills_and_agents_md(dev_server):
    from langgraph_sdk import get_client

    url, srv = dev_server

    def respond(req):
        last = req["messages"][-1]
        if last["role"] == "tool":
            return text(f"read: {last['content']}")
        return tool_call("read_skill", {"name": "triage"})

    srv.responder = respond
    client = get_client(url=url)
    thread = await client.threads.create()
    result = await client.runs.wait(
        thread["thread_id"], "agent", input={"task": "sort these"}, context={"model": "openai:scripted-model"}
    )
    first = srv.requests[0]["messages"][0]["content"]
    assert "- triage: Sort incoming tickets." in first and "TRIAGE-BODY" not in first
    assert "SERVED-PROJECT-RULE" in first
    assert "TRIAGE-BODY" in result["answer"]
    # a client naming a skills folder of its own is refused before anything runs
    refused = await client.runs.wait(
        thread["thread_id"], "agent", input={"task": "x"},
        context={"model": "openai:scripted-model", "skills": ["/etc"]}, raise_error=False,
    )
    assert "skills: a client may only choose among the server's" in str(refused)
