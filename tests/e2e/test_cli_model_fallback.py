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
