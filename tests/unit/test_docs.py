"""The README and docs/ match the code: their Mermaid drawings are the graphs' own, the README's
commands are CI's, it stays a short guide, and every relative link leads to a file; the notebooks
are valid nbformat documents."""

import re
import warnings
from pathlib import Path

import nbformat
import pytest
from conftest import REPO

from smart_agent.graphs.drawings import drawing

README = (REPO / "README.md").read_text()
README_MAX_LINES = 300
#: The files whose drawings are generated (`<!-- mermaid:NAME -->` blocks; rewrite them with
#: `python -m smart_agent.graphs.drawings README.md docs/architecture.md`).
DRAWN = ("README.md", "docs/architecture.md")
DOCS = [REPO / "README.md", REPO / "CONTRIBUTING.md", REPO / "SECURITY.md", *sorted((REPO / "docs").glob("*.md"))]


def mermaid_body(text: str) -> str:
    text = re.sub(r"^---\n.*?\n---\n", "", text, flags=re.S)
    return "\n".join(line.rstrip() for line in text.strip().splitlines())


def drawings(text: str) -> list[tuple[str, str]]:
    return re.findall(r"<!-- mermaid:(\w+) -->\n```mermaid\n(.*?)```\n<!-- /mermaid:\1 -->", text, re.S)


@pytest.mark.parametrize("name", DRAWN)
def test_readme_drawings_are_generated_from_the_graphs(name):
    blocks = drawings((REPO / name).read_text())
    assert blocks, f"{name} has no generated drawing"
    for graph_name, drawn in blocks:
        assert mermaid_body(drawn) == mermaid_body(drawing(graph_name)), (
            f"{name}: the drawing of {graph_name!r} is stale: run `python -m smart_agent.graphs.drawings {name}`"
        )


def test_the_architecture_doc_draws_every_graph():
    from smart_agent.graphs import BUILDERS

    drawn = {name for name, _ in drawings((REPO / "docs" / "architecture.md").read_text())}
    assert drawn == set(BUILDERS)


def test_readme_starts_with_the_two_setup_commands_ci_runs():
    commands = re.findall(r"```bash\n(.*?)\n```", README, re.S)[:2]
    assert commands[0].endswith("smart-agent demo")
    assert commands[1].endswith("-m pytest")
    ci = (REPO / ".ci" / "run").read_text()
    assert commands[1] in ci
    assert commands[0].split(" && ")[:2] == commands[1].split(" && ")[:2]


def test_readme_is_a_short_guide():
    assert len(README.splitlines()) <= README_MAX_LINES, (
        f"README.md has {len(README.splitlines())} lines (at most {README_MAX_LINES}): move the detail to docs/"
    )


def test_readme_has_one_line_per_command():
    from smart_agent.cli.reference import commands

    table = {m.group(1) for m in re.finditer(r"^\| `smart-agent ([a-z]+)[^`]*` \|", README, re.M)}
    top = {words[0] for words, _, _ in commands() if len(words) == 1}
    assert top <= table, f"README's command table lacks {sorted(top - table)}"


def test_readme_links_every_doc():
    linked = set(re.findall(r"\]\((docs/[^)#]+)", README))
    docs = {f"docs/{p.name}" for p in (REPO / "docs").glob("*.md")}
    assert docs <= linked, f"README links none of {sorted(docs - linked)}"


LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)\)")


def relative_links(path: Path) -> list[str]:
    """The relative link targets of a markdown file, outside code blocks and code spans."""
    text = re.sub(r"```.*?```", "", path.read_text(encoding="utf-8"), flags=re.S)
    text = re.sub(r"`[^`\n]*`", "", text)
    return [t for t in LINK.findall(text) if not re.match(r"[a-z]+:", t) and not t.startswith("#")]


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: str(p.relative_to(REPO)))
def test_every_relative_link_leads_to_a_file(doc):
    broken = [t for t in relative_links(doc) if not (doc.parent / t.split("#")[0]).exists()]
    assert not broken, f"{doc.relative_to(REPO)} links to missing files: {broken}"


def test_the_link_check_sees_links_and_skips_code(tmp_path):
    doc = tmp_path / "a.md"
    doc.write_text("[x](b.md) [y](https://e.org) [z](#top) `[c](no.md)`\n```\n[d](no2.md)\n```\n")
    assert relative_links(doc) == ["b.md"]


TEST_PATH = re.compile(r"\btests/(?:unit|graph|e2e|security)/[\w/]+\.py\b")


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: str(p.relative_to(REPO)))
def test_every_test_file_a_doc_names_exists(doc):
    """Docs point readers at the test that proves a behaviour: a moved test must not leave them a dead path."""
    gone = sorted({p for p in TEST_PATH.findall(doc.read_text(encoding="utf-8")) if not (REPO / p).is_file()})
    assert not gone, f"{doc.relative_to(REPO)} names test files that do not exist: {gone}"


NOTEBOOKS = sorted((REPO / "notebooks").glob("*.ipynb"))


def test_there_are_notebooks():
    assert len(NOTEBOOKS) >= 3


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_is_valid_with_cell_ids(path):
    """Every cell has its id, which nbformat 4.5 requires (a missing one is filled in with a
    warning today; later nbformat versions refuse the notebook)."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        nb = nbformat.read(path, as_version=4)
        nbformat.validate(nb)
    ids = [cell.get("id") for cell in nb.cells]
    assert all(ids), f"{path.name}: cells without an id at {[i for i, c in enumerate(ids) if not c]}"
    assert len(set(ids)) == len(ids), f"{path.name}: a cell id is used twice"
