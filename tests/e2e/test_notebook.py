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
