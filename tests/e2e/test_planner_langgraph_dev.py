"""The planner graph under `langgraph dev`: the SDK sees the approval interrupt and resumes it."""

from __future__ import annotations

from smart_agent.testing.scripted_server import text


def submit(plan):
    return {"tool_calls": [{"name": "submit_plan", "arguments": plan}]}


async def test_sdk_approves_an_edited_plan(dev_server):
    from langgraph_sdk import get_client

    url, srv = dev_server
    plan = {"steps": [{"id": "s1", "tool": "calculator", "args": {"expression": "2+2"}}]}
    srv.reset(
        [
            submit(plan),
            lambda req: text("Result: " + req["messages"][-1]["content"].split("output: ")[1].split("\n")[0]),
        ]
    )
    client = get_client(url=url)
    (assistant,) = await client.assistants.search(graph_id="planner")
    schemas = await client.assistants.get_schemas(assistant["assistant_id"])
    props = schemas["context_schema"]["properties"]
    assert props["approve_plan"]["description"] and "max_replans" in props and "max_plan_attempts" in props

    context = {"model": "openai:scripted-model", "approve_plan": True}
    thread = await client.threads.create()
    await client.runs.wait(thread["thread_id"], "planner", input={"task": "What is 6*7?"}, context=context)
    state = await client.threads.get_state(thread["thread_id"])
    (interrupt,) = state["interrupts"]
    assert interrupt["value"]["type"] == "plan_approval" and interrupt["value"]["plan"]["steps"][0]["args"] == {
        "expression": "2+2"
    }

    edited = {"steps": [{"id": "s1", "tool": "calculator", "args": {"expression": "6*7"}}]}
    result = await client.runs.wait(
        thread["thread_id"], "planner", command={"resume": {"action": "edit", "plan": edited}}, context=context
    )
    assert result["answer"] == "Result: 42" and result["status"] == "done"
    assert result["step_results"]["s1"]["output"] == "42"
