"""tools/skills.py in-process: the SKILL.md rules, the listing order and duplicates, an edited SKILL.md
listed anew by the next run start (the parsed front matter is kept only for an unchanged file), the
skills key of the state, and the prompt's blocks."""

from __future__ import annotations

import os

import pytest

from smart_agent.models.prompts import render_instructions
from smart_agent.policies.skills import skill_folders, skills_key
from smart_agent.tools.skills import SkillError, parse_skill, scan_skills

pytestmark = pytest.mark.unit


def write(folder, name, front, body="B"):
    (folder / name).mkdir(parents=True, exist_ok=True)
    path = folder / name / "SKILL.md"
    path.write_text(f"---\n{front}\n---\n{body}\n")
    return path


def test_parse_rules():
    name, description, body = parse_skill("---\nname: a-b.c\ndescription: |\n  two\n  lines\n---\n# Body\n", "x")
    assert (name, description, body) == ("a-b.c", "two lines", "# Body\n")
    assert parse_skill("\ufeff---\r\nname: n\r\ndescription: d\r\n---\r\nbody", "x")[2] == "body"
    long = parse_skill("---\nname: n\ndescription: " + "w " * 900 + "\n---\n", "x")[1]
    assert len(long) == 1024 and long.endswith("…")
    for text, why in [
        ("no front matter", "no YAML front matter"),
        ("---\nname: n\ndescription: d\n", "no closing '---' line"),
        ("---\n- a list\n---\n", "not a mapping"),
        ("---\ndescription: d\n---\n", "name: missing"),
        ("---\nname: n\n---\n", "description: missing"),
        ("---\nname: ../../etc\ndescription: d\n---\n", "is not a skill name"),
        ("---\nname: " + "n" * 65 + "\ndescription: d\n---\n", "is not a skill name"),
    ]:
        with pytest.raises(SkillError, match=why):
            parse_skill(text, "x")


def test_order_duplicates_and_an_edited_skill_listed_anew(tmp_path):
    first, second = tmp_path / "first", tmp_path / "second"
    path = write(first, "zeta", "name: zeta\ndescription: old")
    write(first, "alpha", "name: alpha\ndescription: a")
    write(second, "other", "name: zeta\ndescription: the same name")
    (first / ".hidden").mkdir()
    (first / "not-a-skill").mkdir()
    found, warnings = scan_skills([str(first), str(second), str(tmp_path / "missing")])
    assert [(s.name, s.description) for s in found] == [("alpha", "a"), ("zeta", "old")]
    assert len(warnings) == 1 and "another skill is named 'zeta'" in warnings[0]
    path.write_text("---\nname: zeta\ndescription: new\n---\nB\n")  # the same size, a later time
    os.utime(path, ns=(10**18, 10**18))
    assert [s.description for s in scan_skills([str(first)])[0]] == ["a", "new"]
    path.write_text("---\nname: zeta\n---\n")
    found, warnings = scan_skills([str(first)])
    assert [s.name for s in found] == ["alpha"] and "description: missing" in warnings[0]


def test_skills_key_and_folders(monkeypatch, tmp_path):
    monkeypatch.setenv("SMART_AGENT_HOME", str(tmp_path / "h"))
    assert skill_folders(["a", "b", "a"]) == ("a", "b", str(tmp_path / "h" / "skills"))
    assert skills_key(None) == str(tmp_path / "h" / "skills")
    monkeypatch.setenv("SMART_AGENT_HOME", str(tmp_path / "other"))
    assert skills_key(["a"]) == f"a\n{tmp_path / 'other' / 'skills'}"


def test_instructions_block():
    block = render_instructions("workspace", "  Use tabs.\n", None)
    assert block.startswith("PROJECT INSTRUCTIONS from AGENTS.md in the workspace.") and block.endswith("Use tabs.")
    cut = render_instructions("home", "x" * 10, 10)
    assert "longer than 10 characters" in cut and "read_file" not in cut
