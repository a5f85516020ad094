"""benchmarks/run_all.py: one markdown file from every section; a section that fails (or whose
benchmark module is not there) is reported in its place and the others still run."""

from __future__ import annotations

import pytest
from conftest import benchmark_module

run_all = benchmark_module("run_all")


def test_sections_run_in_one_process_and_a_failure_is_reported_in_place(tmp_path, monkeypatch):
    def fine(quick):
        rows = [{"run": "create_agent", "ratio": 1.0}, {"run": "smart-agent", "ratio": 0.5}]
        return rows, run_all.table(rows, [("run", "run", 0), ("ratio", "÷ create_agent", 2)])

    def broken(quick):
        return run_all._rows("no_such_benchmark")

    monkeypatch.setattr(run_all, "TITLES", {"step": ("Fine", fine), "memory": ("Broken", broken)})
    out = tmp_path / "all.md"
    assert run_all.main(["--only", "memory,step", "--out", str(out)]) == 0
    text = out.read_text()
    assert "## Broken\n\nNot run: ModuleNotFoundError" in text
    fine_table = "| run | ÷ create_agent |\n| --- | ---: |\n| create_agent | 1.00 |\n| smart-agent | 0.50 |"
    assert f"## Fine\n\n{fine_table}" in text
    assert text.index("## Broken") < text.index("## Fine")  # in the order asked for
    assert (tmp_path / "all.json").exists()


def test_unknown_section_is_one_line(capsys):
    with pytest.raises(SystemExit) as exit_:
        run_all.main(["--only", "step,speed"])
    assert exit_.value.code == 2 and "unknown section(s) speed" in capsys.readouterr().err


def test_readme_block_is_replaced_between_its_markers(tmp_path):
    readme = tmp_path / "README.md"
    readme.write_text("intro\n<!-- run_all -->\nold table\n<!-- /run_all -->\nafter\n")
    run_all.update_readme(readme, "# smart-agent benchmarks\n\n## Step\n\n| a |\n")
    assert readme.read_text() == "intro\n<!-- run_all -->\n**Step**\n\n| a |\n<!-- /run_all -->\nafter\n"
    plain = tmp_path / "plain.md"
    plain.write_text("no block here\n")
    with pytest.raises(ValueError, match="no <!-- run_all -->"):
        run_all.update_readme(plain, "")



def test_the_step_section_adds_the_instruction_counts_with_their_verdicts(monkeypatch):
    step_instructions = benchmark_module("step_instructions")
    counted = [
        {"turns": 20, "mode": "create_agent", "instructions_per_step": 6_470_000, "ratio": 1.0},
        {"turns": 20, "mode": "memory off", "instructions_per_step": 7_270_000, "ratio": 1.124},
        {"turns": 100, "mode": "create_agent", "instructions_per_step": 7_580_000, "ratio": 1.0},
        {"turns": 100, "mode": "memory off", "instructions_per_step": 7_620_000, "ratio": 1.005},
    ]
    monkeypatch.setattr(step_instructions, "available", lambda: True)
    monkeypatch.setattr(step_instructions, "rows", lambda turns, repeat=3: counted)
    block = run_all.instructions_block(quick=False)
    assert "| 20 | memory off | 7,270,000 | 1.124 |" in block
    assert "memory off at 20 turns: 1.124 (target ≤ 1.1) NOT met" in block
    assert "memory off at 100 turns: 1.005 (target ≤ 1.1) met" in block
    assert run_all.instructions_block(quick=True) == ""
    monkeypatch.setattr(step_instructions, "available", lambda: False)
    assert run_all.instructions_block(quick=False) == ""
