"""Dependencies run one way: core modules <- memory <- tools <- history <- nodes <- graphs
<- cli, and no package module imports another in a cycle (imports inside functions count
too).

Every module of the package is parsed with ``ast`` (nothing is imported); relative
imports are resolved by file, so this holds whatever the entry point.
"""

from __future__ import annotations

import ast
import functools
import tomllib
from graphlib import CycleError, TopologicalSorter
from pathlib import Path

from conftest import REPO, package_files

PACKAGE = "smart_agent"

# Lower layers never import upper ones. A top-level module or package not named here
# is core (context, state, messages, models, events, tokens, sessions, history, ...).
# history/ (context management) measures requests with the tools a turn offers.
LAYERS = {"memory": 1, "tools": 2, "history": 3, "nodes": 4, "graphs": 5, "testing": 5, "cli": 6}
CORE = 0


def package_modules() -> dict[str, Path]:
    """Dotted name -> file of every module of the package (the repository root is the package)."""
    out: dict[str, Path] = {}
    for path in package_files():
        parts = [PACKAGE, *path.relative_to(REPO).with_suffix("").parts]
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


def imported_modules(name: str, path: Path, modules: dict[str, Path]) -> set[str]:
    """The package modules ``name`` imports anywhere in its file (module level, functions,
    ``TYPE_CHECKING`` blocks), resolved to the most specific module."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()

    def add(target: str, names: list[str]) -> None:
        for alias in names:  # `from .pkg import module` imports that module
            if f"{target}.{alias}" in modules:
                found.add(f"{target}.{alias}")
            elif target in modules:
                found.add(target)
        if not names and target in modules:
            found.add(target)

    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name == PACKAGE or alias.name.startswith(PACKAGE + "."):
                    add(alias.name, [])
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            elif node.module and (node.module == PACKAGE or node.module.startswith(PACKAGE + ".")):
                target = node.module
            else:
                continue
            add(target, [a.name for a in node.names])
    found.discard(name)
    return found


@functools.cache
def import_graph() -> dict[str, set[str]]:
    modules = package_modules()
    return {name: imported_modules(name, path, modules) for name, path in modules.items()}


def layer(module: str) -> int:
    parts = module.split(".")
    return LAYERS.get(parts[1], CORE) if len(parts) > 1 else CORE


def test_the_import_graph_sees_the_package() -> None:
    graph = import_graph()
    assert {
        "smart_agent.cli",
        "smart_agent.graphs.agent",
        "smart_agent.nodes.agent",
        "smart_agent.tools.registry",
    } <= set(graph)
    assert "smart_agent.tools.registry" in graph["smart_agent.tools.builtins"]  # a relative import resolved by file
    assert "smart_agent.graphs.agent" in graph["smart_agent.graphs.fleet"]


def test_no_import_cycle() -> None:
    graph = import_graph()
    cycles = []
    remaining = dict(graph)
    while True:  # report every cycle, not just the first one graphlib meets
        try:
            TopologicalSorter(remaining).prepare()
            break
        except CycleError as exc:
            cycle = exc.args[1]  # each node is imported by the next one
            cycles.append(" imports ".join(reversed(cycle)))
            first, second = cycle[0], cycle[1]
            remaining = {**remaining, second: remaining[second] - {first}}
    assert not cycles, "import cycles among package modules:\n" + "\n".join(cycles)


def test_lower_layers_never_import_upper_ones() -> None:
    upward = sorted(
        f"{module} (layer {layer(module)}) imports {target} (layer {layer(target)})"
        for module, targets in import_graph().items()
        for target in targets
        if layer(target) > layer(module)
    )
    assert not upward, (
        "imports against the layering core <- memory <- tools <- history <- nodes <- graphs <- cli:\n"
        + "\n".join(upward)
    )


def test_only_cli_imports_cli() -> None:
    graph = import_graph()
    outside = sorted(
        m
        for m, targets in graph.items()
        if not m.startswith("smart_agent.cli") and any(t.startswith("smart_agent.cli") for t in targets)
    )
    assert not outside, f"CLI code imported outside cli/: {outside}"


def test_every_package_folder_is_installed() -> None:
    """setuptools' package list is explicit: a package folder missing from it works in the
    editable install and is absent from a wheel."""
    listed = set(tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
    folders = {name for name, path in package_modules().items() if path.name == "__init__.py"}
    assert folders <= listed, f"add to [tool.setuptools] packages: {sorted(folders - listed)}"
