"""notebooks/quickstart.ipynb executes top to bottom (its own asserts check the results)."""

import nbformat
from conftest import REPO
from nbclient import NotebookClient


def test_quickstart_notebook_executes(tmp_path, monkeypatch):
    nb = nbformat.read(REPO / "notebooks" / "quickstart.ipynb", as_version=4)
    monkeypatch.setenv("SMART_AGENT_MEMORY", "false")
    NotebookClient(nb, timeout=180, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}).execute()
    outputs = "".join(o.get("text", "") for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", []))
    assert "answer: 37 × 43 = 1591" in outputs
    assert "toolLimitFinalize" in outputs  # the Mermaid drawing
    assert "tool_call" in outputs and "tool_result" in outputs


def test_human_in_the_loop_notebook_executes(tmp_path, monkeypatch):
    """notebooks/human_in_the_loop.ipynb: an approval paused, inspected and resumed three ways
    (reject, approve, edit) with Command(resume=...); its cells assert the files and requests."""
    nb = nbformat.read(REPO / "notebooks" / "human_in_the_loop.ipynb", as_version=4)
    monkeypatch.setenv("SMART_AGENT_MEMORY", "false")
    NotebookClient(nb, timeout=180, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}).execute()
    outputs = "".join(o.get("text", "") for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", []))
    assert '"action_requests"' in outputs and "paused before: ('human',)" in outputs
    assert "I did not save it: The user rejected the tool call 'write_file'" in outputs
    assert "reviewed.txt: 37*43 = 1591 (checked)" in outputs


def test_teams_notebook_executes(tmp_path, monkeypatch):
    """notebooks/teams.ipynb: an agents file's team, a handoff and a named sub-agent, offline;
    its cells assert the answer and what each request carried."""
    nb = nbformat.read(REPO / "notebooks" / "teams.ipynb", as_version=4)
    monkeypatch.setenv("SMART_AGENT_MEMORY", "false")
    NotebookClient(nb, timeout=180, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}).execute()
    outputs = "".join(o.get("text", "") for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", []))
    assert "handoff {'from': 'triage', 'to': 'math'}" in outputs
    assert "'agent': 'checker-" in outputs
    assert "answer: 37 × 43 = 1591 (checker: yes: 37*43 = 1591)" in outputs
