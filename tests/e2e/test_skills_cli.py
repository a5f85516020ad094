"""Skills and project instructions through `smart-agent run`, against the scripted server over the real
OpenAI client: `--skills DIR` lists each skill's name and description in the first request and no
body; the model opens one with read_skill and its body reaches the answer; a malformed SKILL.md is one
warning line naming it and the run goes on; the workspace's AGENTS.md is in the first request (cut,
with a note, past --agents-md-max-chars) and not with --no-agents-md; $SMART_AGENT_HOME's skills and
AGENTS.md are read too; an agents file's `skills:` are that agent's."""

from __future__ import annotations

import json

import pytest
from conftest import cli_env, offered, run_cli

from smart_agent.testing.scripted_server import text, tool_call


def system(req: dict) -> str:
    return req["messages"][0]["content"]


def skill(folder, name: str, description: str, body: str, **files: str) -> None:
    path = folder / name
    path.mkdir(parents=True)
    (path / "SKILL.md").write_text(f"---\nname: {name}\ndescription: {description}\n---\n{body}\n")
    for rel, content in files.items():
        (path / rel).write_text(content)


@pytest.fixture
def skills(tmp_path):
    folder = tmp_path / "skills"
    skill(folder, "pdf-tools", "Extract text and tables from PDF files.", "# PDF\nPDF-BODY: run extract.py first.",
          **{"extract.py": "print('EXTRACT-SCRIPT')"})
    skill(folder, "release-notes", "Write release notes from a changelog.", "RELEASE-BODY: group by kind.")
    return folder


def echo_after(call):
    """A responder: ``call`` on the first turn, then an answer quoting the tool result."""

    def respond(req):
        last = req["messages"][-1]
        return text(f"answer: {last['content']}") if last["role"] == "tool" else call

    return respond


def test_first_request_lists_skills_without_bodies_and_an_opened_body_reaches_the_answer(
    scripted_server, workspace, skills
):
    srv = scripted_server(responder=echo_after(tool_call("read_skill", {"name": "pdf-tools"})))
    res = run_cli(["run", "Get the text of report.pdf", "--skills", str(skills), "--workspace", str(workspace),
                   "--json"], env=cli_env(srv))
    assert res.returncode == 0, res.stderr
    first, second = srv.requests
    prompt = system(first)
    assert "- pdf-tools: Extract text and tables from PDF files." in prompt
    assert "- release-notes: Write release notes from a changelog." in prompt
    assert "read_skill" in offered(first)
    everything = json.dumps(first)
    assert "PDF-BODY" not in everything and "RELEASE-BODY" not in everything and "EXTRACT-SCRIPT" not in everything
    # the body (and the names of the files beside it) reach the model once it opens the skill, then the answer
    assert "PDF-BODY: run extract.py first." in second["messages"][-1]["content"]
    assert "extract.py" in second["messages"][-1]["content"]
    assert system(second) == prompt  # the prompt does not change between turns
    answer = json.loads(res.stdout)["answer"]
    assert "PDF-BODY: run extract.py first." in answer and "RELEASE-BODY" not in json.dumps(srv.requests)


def test_a_file_of_the_skill_is_read_with_its_path(scripted_server, workspace, skills):
    srv = scripted_server(responder=echo_after(tool_call("read_skill", {"name": "pdf-tools", "path": "extract.py"})))
    res = run_cli(["run", "extract", "--skills", str(skills), "--workspace", str(workspace), "--json"],
                  env=cli_env(srv))
    assert res.returncode == 0, res.stderr
    assert json.loads(res.stdout)["answer"] == "answer: print('EXTRACT-SCRIPT')"


def test_a_malformed_skill_is_one_warning_line_and_the_run_goes_on(scripted_server, workspace, skills):
    bad = skills / "broken" / "SKILL.md"
    bad.parent.mkdir()
    bad.write_text("---\nname: [broken\ndescription: x\n---\nBROKEN-BODY\n")
    nameless = skills / "nameless" / "SKILL.md"
    nameless.parent.mkdir()
    nameless.write_text("# no front matter\n")
    srv = scripted_server([text("fine")])
    res = run_cli(["run", "hi", "--skills", str(skills), "--workspace", str(workspace)], env=cli_env(srv))
    assert res.returncode == 0, res.stderr
    warned = [line for line in (res.stdout + res.stderr).splitlines() if "warning" in line]
    assert len(warned) == 2, warned
    assert str(bad) in warned[0] and "not valid YAML" in warned[0] and "skipped" in warned[0]
    assert str(nameless) in warned[1] and "no YAML front matter" in warned[1]
    prompt = system(srv.requests[0])
    assert "- pdf-tools:" in prompt and "- release-notes:" in prompt and "broken" not in prompt
    assert "fine" in res.stdout


def test_agents_md_is_in_the_first_request_and_not_with_no_agents_md(scripted_server, workspace):
    (workspace / "AGENTS.md").write_text("Use tabs. PROJECT-RULE-7.\n")
    srv = scripted_server([text("one"), text("two")])
    on = run_cli(["run", "hi", "--workspace", str(workspace)], env=cli_env(srv))
    off = run_cli(["run", "hi", "--workspace", str(workspace), "--no-agents-md"], env=cli_env(srv))
    assert on.returncode == 0 and off.returncode == 0, (on.stderr, off.stderr)
    with_file, without = srv.requests
    assert "PROJECT-RULE-7" in system(with_file) and "AGENTS.md in the workspace" in system(with_file)
    assert "PROJECT-RULE-7" not in json.dumps(without)
    # the instructions never change what the run may do: the same tools either way
    assert offered(with_file) == offered(without)


def test_a_long_agents_md_is_cut_with_a_note(scripted_server, workspace):
    (workspace / "AGENTS.md").write_text("HEAD " + "x" * 5000 + " TAIL-MARK")
    srv = scripted_server([text("ok")])
    res = run_cli(["run", "hi", "--workspace", str(workspace), "--agents-md-max-chars", "300"], env=cli_env(srv))
    assert res.returncode == 0, res.stderr
    prompt = system(srv.requests[0])
    assert "HEAD " in prompt and "TAIL-MARK" not in prompt
    assert "longer than 300 characters: only its beginning is shown" in prompt and 'read_file("AGENTS.md"' in prompt


def test_the_data_folders_skills_and_agents_md_are_read_too(scripted_server, workspace, tmp_path, skills):
    home = tmp_path / "home"
    skill(home / "skills", "house-style", "The house writing style.", "HOUSE-BODY")
    (home / "AGENTS.md").write_text("Answer in English. STANDING-RULE.\n")
    srv = scripted_server([text("ok")])
    res = run_cli(["run", "hi", "--skills", str(skills), "--workspace", str(workspace)],
                  env=cli_env(srv, SMART_AGENT_HOME=str(home)))
    assert res.returncode == 0, res.stderr
    prompt = system(srv.requests[0])
    assert "STANDING-RULE" in prompt and "AGENTS.md in smart-agent's data folder" in prompt
    # the --skills folders first, then the data folder's
    assert prompt.index("- pdf-tools:") < prompt.index("- house-style: The house writing style.")
    assert "HOUSE-BODY" not in prompt


def test_an_agents_files_skills_are_that_agents(scripted_server, workspace, tmp_path):
    team = tmp_path / "team"
    skill(team / "writer-skills", "tone", "How to keep the tone.", "TONE-BODY")
    (team / "team.yaml").write_text(
        "agents:\n  writer:\n    description: Writes.\n    prompt: You are the writer.\n    tools: []\n"
        "    skills: [writer-skills]\n"  # relative to the file's folder
    )
    srv = scripted_server(responder=echo_after(tool_call("read_skill", {"name": "tone"})))
    res = run_cli(["run", "write", "--agents", str(team / "team.yaml"), "--workspace", str(workspace), "--json"],
                  env=cli_env(srv))
    assert res.returncode == 0, res.stderr
    first = srv.requests[0]
    assert "- tone: How to keep the tone." in system(first) and offered(first) == ["read_skill"]
    assert "TONE-BODY" in json.loads(res.stdout)["answer"]


def test_no_skills_no_read_skill_and_a_bad_skills_flag_is_one_line(scripted_server, workspace, tmp_path):
    srv = scripted_server([text("ok")])
    res = run_cli(["run", "hi", "--workspace", str(workspace)], env=cli_env(srv))
    assert res.returncode == 0, res.stderr
    assert "read_skill" not in offered(srv.requests[0]) and "SKILLS:" not in system(srv.requests[0])
    bad = run_cli(["run", "hi", "--skills", str(tmp_path / "missing")], env=cli_env(srv))
    assert bad.returncode == 2 and len(bad.stderr.strip().splitlines()) == 1 and "does not exist" in bad.stderr
