"""CI's lint and type check catch real mistakes: on a copy of the package with one
deliberate error, ``mypy`` (configured in pyproject.toml) exits 1 naming the file, and
``ruff check .`` exits 1 naming the unused import. The clean tree itself is checked by
.ci/run; mypy on the whole package takes about a minute, hence e2e."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
NOT_THE_PACKAGE = (
    ".git", ".venv", "build", "tests", "benchmarks", "notebooks", "docs", "*.egg-info",
    ".mypy_cache", ".ruff_cache", ".pytest_cache", "__pycache__", ".langgraph_api",
)


@pytest.fixture
def package_copy(tmp_path: Path) -> Path:
    # (named as git names a clone: not a valid package name; mypy still calls it smart_agent)
    dst = tmp_path / "smart-agent"
    shutil.copytree(ROOT, dst, symlinks=True, ignore=shutil.ignore_patterns(*NOT_THE_PACKAGE))
    return dst


def tool(name: str, *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", name, *args], cwd=cwd, capture_output=True, text=True, timeout=600, check=False
    )


def test_mypy_passes_in_a_clone_folder_named_smart_agent(package_copy: Path) -> None:
    result = tool("mypy", "--cache-dir", str(package_copy.parent / "mypy_cache"), cwd=package_copy)
    assert result.returncode == 0, result.stdout + result.stderr


def test_mypy_reports_a_bad_call_in_a_node(package_copy: Path) -> None:
    node = package_copy / "nodes" / "agent.py"
    node.write_text(
        node.read_text() + "\n\ndef _deliberate_type_error() -> None:\n    make_agent_node(registry=1)\n"
    )
    result = tool("mypy", "--cache-dir", str(package_copy.parent / "mypy_cache"), cwd=package_copy)
    assert result.returncode == 1, result.stdout + result.stderr
    errors = [line for line in result.stdout.splitlines() if ": error:" in line]
    assert len(errors) == 1, result.stdout
    assert errors[0].startswith(".typing/smart_agent/nodes/agent.py:") and '"make_agent_node"' in errors[0], errors


def test_ruff_reports_an_unused_import(package_copy: Path) -> None:
    assert tool("ruff", "check", ".", "--no-cache", cwd=package_copy).returncode == 0
    events = package_copy / "runs" / "events.py"
    events.write_text(events.read_text() + "\nimport fractions\n")
    result = tool("ruff", "check", ".", "--no-cache", cwd=package_copy)
    assert result.returncode == 1
    assert "runs/events.py" in result.stdout and "F401" in result.stdout, result.stdout
