"""docs/cli.md holds every command's flag table, as the parser makes it (cli/reference.py)."""

from __future__ import annotations

import pytest
from conftest import REPO

from smart_agent.cli.reference import blocks, commands, fill, missing

pytestmark = pytest.mark.unit

CLI_DOC = REPO / "docs" / "cli.md"


def test_the_cli_reference_is_not_stale():
    on_disk = CLI_DOC.read_text(encoding="utf-8")
    assert fill(on_disk) == on_disk, (
        "docs/cli.md is stale: run `python -m smart_agent.cli.reference docs/cli.md`"
    )


def test_every_command_has_its_table_and_a_heading():
    text = CLI_DOC.read_text(encoding="utf-8")
    assert not missing(text), f"docs/cli.md lacks the blocks of {missing(text)}"
    for words, _, _ in commands():
        if len(words) == 1:
            assert f"\n### {words[0]}\n" in text, f"docs/cli.md has no section for {words[0]!r}"


def test_a_flag_table_lists_the_commands_own_flags_and_links_the_settings():
    made = blocks()
    assert "`--mcp-config FILE`" in made["run"] and "`--json`" in made["run"]
    assert "| `--max-tool-calls" not in made["run"]  # a setting: in docs/configuration.md
    assert "[configuration.md](configuration.md)" in made["run"]
    assert "`--decisions FILE`" in made["resume"]
    assert "`QUERY`" in made["memory search"]
    assert "| [`serve`](#serve) |" in made["commands"]


def test_fill_rewrites_a_stale_block_and_refuses_an_unknown_one():
    stale = "<!-- cli:demo -->\nold\n<!-- /cli:demo -->\n"
    assert "--workspace" in fill(stale)
    with pytest.raises(ValueError, match="no command 'nope'"):
        fill("<!-- cli:nope -->\n<!-- /cli:nope -->\n")
