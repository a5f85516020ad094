"""CI's lint and type check catch real mistakes: on a copy of the project in a folder named
``smart-agent`` (git's default), ``mypy`` as configured in pyproject.toml passes on the clean
tree, then exits 1 naming the file of one deliberate error in the package or in a test, and
``ruff check .`` exits 1 naming an unused import. The clean tree itself is checked by .ci/run;
mypy on the whole project takes a minute or two, hence e2e."""

from __future__ import annotations

import contextlib
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
NOT_THE_PROJECT = (
    ".git", ".venv", "build", "benchmarks", "notebooks", "docs", "*.egg-info",
    ".mypy_cache", ".ruff_cache", ".pytest_cache", "__pycache__", ".langgraph_api",
)
# One copy and one mypy cache for the module (a cold mypy run takes a minute or two): its tests
# run on one worker (--dist loadfile), one after the other, each restoring what it changed.


@dataclass
class Checked:
    folder: Path
    first_run: subprocess.CompletedProcess[str]

    def mypy(self) -> subprocess.CompletedProcess[str]:
        """mypy as configured (the package and the tests), the module's cache warm."""
        return tool("mypy", "--cache-dir", str(self.folder.parent / "mypy_cache"), cwd=self.folder)

    @contextlib.contextmanager
    def edited(self, rel: str, extra: str) -> Iterator[Path]:
        """``rel`` with ``extra`` appended, restored afterwards."""
        path = self.folder / rel
        original = path.read_text()
        path.write_text(original + extra)
        try:
            yield path
        finally:
            path.write_text(original)


@pytest.fixture(scope="module")
def checked(tmp_path_factory: pytest.TempPathFactory) -> Checked:
    """A copy of the project (named as git names a clone: not a valid package name; mypy still
    calls it smart_agent), type-checked once as CI does."""
    dst = tmp_path_factory.mktemp("clone") / "smart-agent"
    shutil.copytree(ROOT, dst, symlinks=True, ignore=shutil.ignore_patterns(*NOT_THE_PROJECT))
    checked = Checked(dst, subprocess.CompletedProcess([], 0))
    checked.first_run = checked.mypy()
    return checked


def tool(name: str, *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", name, *args], cwd=cwd, capture_output=True, text=True, timeout=600, check=False
    )


def test_mypy_passes_in_a_clone_folder_named_smart_agent(checked: Checked) -> None:
    result = checked.first_run
    assert result.returncode == 0, result.stdout + result.stderr
    checked_files = re.search(r"no issues found in (\d+) source files", result.stdout)
    assert checked_files and int(checked_files[1]) == len(list(checked.folder.rglob("*.py")))  # the tests too
    unit = tool("mypy", "--cache-dir", str(checked.folder.parent / "mypy_cache"), "tests/unit", cwd=checked.folder)
    assert unit.returncode == 0, unit.stdout + unit.stderr


def test_mypy_reports_a_bad_call_in_a_node(checked: Checked) -> None:
    bad_call = "\n\ndef _deliberate_type_error() -> None:\n    make_agent_node(registry=1)\n"
    with checked.edited("nodes/agent.py", bad_call):
        result = checked.mypy()
    assert result.returncode == 1, result.stdout + result.stderr
    errors = [line for line in result.stdout.splitlines() if ": error:" in line]
    assert len(errors) == 1, result.stdout
    assert errors[0].startswith(".typing/smart_agent/nodes/agent.py:") and '"make_agent_node"' in errors[0], errors


def test_mypy_reports_a_wrong_type_in_a_test(checked: Checked) -> None:
    bad_test = "\n\ndef test_deliberate_type_error() -> None:\n    function_of(1)\n"
    with checked.edited("tests/unit/tools/test_builtins.py", bad_test):
        result = checked.mypy()
    assert result.returncode == 1, result.stdout + result.stderr
    errors = [line for line in result.stdout.splitlines() if ": error:" in line]
    assert len(errors) == 1 and errors[0].startswith("tests/unit/tools/test_builtins.py:"), result.stdout
    assert '"function_of"' in errors[0], errors


def test_ruff_reports_an_unused_import(checked: Checked) -> None:
    assert tool("ruff", "check", ".", "--no-cache", cwd=checked.folder).returncode == 0
    with checked.edited("runs/events.py", "\nimport fractions\n"):
        result = tool("ruff", "check", ".", "--no-cache", cwd=checked.folder)
    assert result.returncode == 1
    assert "runs/events.py" in result.stdout and "F401" in result.stdout, result.stdout
