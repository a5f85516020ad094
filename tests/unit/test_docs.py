"""The README matches the code: its Mermaid drawings are the graphs' own, its commands are CI's."""

import re

from conftest import REPO

from smart_agent.graphs import get_builder
from smart_agent.tools.registry import ToolRegistry

README = (REPO / "README.md").read_text()


def mermaid_body(text: str) -> str:
    text = re.sub(r"^---\n.*?\n---\n", "", text, flags=re.S)
    return "\n".join(line.rstrip() for line in text.strip().splitlines())


def test_readme_drawings_are_generated_from_the_graphs():
    blocks = re.findall(r"<!-- mermaid:(\w+) -->\n```mermaid\n(.*?)```\n<!-- /mermaid:\1 -->", README, re.S)
    assert blocks, "README has no generated drawing"
    for name, drawn in blocks:
        kwargs = {"registry": ToolRegistry()} if name == "agent" else {}
        graph = get_builder(name)(**kwargs)
        assert mermaid_body(drawn) == mermaid_body(graph.get_graph().draw_mermaid()), (
            f"README drawing of {name!r} is stale"
        )


def test_readme_starts_with_the_two_setup_commands_ci_runs():
    commands = re.findall(r"```bash\n(.*?)\n```", README, re.S)[:2]
    assert commands[0].endswith("smart-agent demo")
    assert commands[1].endswith("-m pytest")
    ci = (REPO / ".ci" / "run").read_text()
    assert commands[1] in ci
    assert commands[0].split(" && ")[:2] == commands[1].split(" && ")[:2]
