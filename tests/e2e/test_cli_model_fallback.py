"""--fallback-model: a provider error of the first model sends the request to the next one."""

from conftest import cli_env, run_cli

from smart_agent.testing.scripted_server import text


def by_model(first_error):
    def responder(req):
        if req.get("model") == "A":
            return {"error": first_error}
        return text(f"answer from {req.get('model')}")

    return responder


def test_server_error_falls_back_to_the_next_model(scripted_server, workspace):
    srv = scripted_server(responder=by_model({"status": 500, "message": "model A is down"}))
    args = ["run", "hi", "--model", "openai:A", "--fallback-model", "openai:B", "--model-retries", "0"]
    res = run_cli([*args, "--workspace", str(workspace)], env=cli_env(srv))
    assert res.returncode == 0, res.stderr
    assert "answer from B" in res.stdout
    assert "model openai:A failed" in res.stdout and "trying openai:B" in res.stdout  # the event line
    assert [r["model"] for r in srv.requests] == ["A", "B"]


def test_rejected_credentials_do_not_fall_back(scripted_server, workspace):
    srv = scripted_server(responder=by_model({"status": 401, "message": "Incorrect API key"}))
    args = ["run", "hi", "--model", "openai:A", "--fallback-model", "openai:B", "--model-retries", "0"]
    res = run_cli([*args, "--workspace", str(workspace)], env=cli_env(srv))
    assert res.returncode == 2 and "rejected the credentials" in res.stderr and "Traceback" not in res.stderr
    assert "trying openai:B" not in res.stdout + res.stderr and [r["model"] for r in srv.requests] == ["A"]


def test_a_fallback_model_must_be_provider_model(workspace):
    res = run_cli(["run", "hi", "--fallback-model", "B"], env=cli_env())
    assert res.returncode == 2 and "fallback_models" in res.stderr and "Traceback" not in res.stderr


def test_a_run_that_fails_names_its_thread_without_json(scripted_server, workspace):
    srv = scripted_server(responder=by_model({"status": 500, "message": "model A is down"}))
    args = ["run", "hi", "--model", "openai:A", "--model-retries", "0", "--workspace", str(workspace)]
    named = run_cli([*args, "--thread", "f1"], env=cli_env(srv))
    assert named.returncode == 1 and named.stderr.strip().splitlines() == [
        "smart-agent: OpenAIAPIError: Error code: 500 - model A is down (thread f1; set SMART_AGENT_DEBUG=1 for the"
        " traceback)"
    ]
    made_up = run_cli(args, env=cli_env(srv))  # a thread id made up for the run: the line is how to find it
    assert made_up.returncode == 1 and "(thread " in made_up.stderr
    thread = made_up.stderr.split("(thread ", 1)[1].split(";", 1)[0]
    shown = run_cli(["threads", "show", thread], env=cli_env(srv))
    assert shown.returncode == 0 and "hi" in shown.stdout, shown.stderr
