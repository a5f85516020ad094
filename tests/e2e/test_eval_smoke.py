"""The bundled suite ``evals/smoke.yaml`` (every graph and main feature) replays from its
committed cassettes ``evals/cassettes/`` through ``smart-agent eval --replay`` with no model
server, every case passing; and the bundled scripted responder the cassettes were recorded
against still plays the same runs live (same answers and tool calls)."""

from __future__ import annotations

import json

from conftest import REPO, cli_env, run_cli

from smart_agent.evaluation import load_suite
from smart_agent.graphs import BUILDERS
from smart_agent.testing.eval_smoke import smoke_responder

SUITE = REPO / "evals" / "smoke.yaml"
CASSETTES = REPO / "evals" / "cassettes"


def runs(results):
    return {c["id"]: (c["passed"], c["results"][0]["answer"], c["results"][0]["tools"]) for c in results["cases"]}


def test_smoke_suite_covers_every_graph_and_has_a_cassette_per_case():
    suite = load_suite(SUITE)
    assert len(suite.cases) >= 15
    assert {c.graph or "agent" for c in suite.cases} == set(BUILDERS)
    assert sorted(p.name for p in CASSETTES.iterdir()) == sorted(c.id for c in suite.cases)


def test_smoke_suite_replays_offline_and_matches_the_live_responder(scripted_server, tmp_path):
    # no key (a replay needs none) and no SMART_AGENT_MODEL: the docs' command as written (the suite pins its model)
    offline = cli_env(OPENAI_BASE_URL="http://127.0.0.1:9/v1", SMART_AGENT_HOME=str(tmp_path / "home1"))
    res = run_cli(["eval", str(SUITE), "--replay", str(CASSETTES), "--out", str(tmp_path / "replay"),
                   "--min-pass-rate", "1.0", "--json"], env=offline, timeout=600)
    assert res.returncode == 0, res.stderr
    replayed = json.loads(res.stdout)
    assert replayed["summary"]["passed"] == replayed["summary"]["cases"] >= 15, replayed["summary"]

    srv = scripted_server(responder=smoke_responder, model="scripted-smoke")
    live_env = cli_env(srv, SMART_AGENT_MODEL="openai:scripted-smoke", SMART_AGENT_HOME=str(tmp_path / "home2"))
    res = run_cli(["eval", str(SUITE), "--out", str(tmp_path / "live"), "--json"], env=live_env, timeout=600)
    assert res.returncode == 0, res.stderr
    assert runs(json.loads(res.stdout)) == runs(replayed)
