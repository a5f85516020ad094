"""tests/unit mirrors the package: the tests of ``smart_agent.<package>.<module>`` are in
``tests/unit/<package>/test_<module>.py`` (or ``test_<module>_<aspect>.py``, or
``test_<package>.py`` for a package as a whole), those of a root module such as ``state.py`` in
``tests/unit/test_state.py``. A unit test file anywhere else fails here, naming where it may go."""

from __future__ import annotations

from pathlib import Path

from conftest import REPO

UNIT = Path(__file__).resolve().parent
# Top-level files that test the repository as a whole rather than one module.
WHOLE_REPOSITORY = {
    "test_docs.py": "the README against the code and CI",
    "test_layering.py": "the imports of every module",
    "test_layout.py": "this folder's layout",
    "test_sockets.py": "tests/unit's socket guard (conftest.py)",
}
# Folders of the repository that hold Python modules outside the package (benchmarks/run_all.py).
NOT_PACKAGE_FOLDERS = {"benchmarks"}


def module_names(folder: Path, *, packages: bool = True) -> set[str]:
    """The modules (and sub-packages) of a package folder: ``store``, ``planner``..."""
    names = {p.stem for p in folder.glob("*.py") if p.name != "__init__.py"}
    return names | ({p.name for p in folder.iterdir() if (p / "__init__.py").is_file()} if packages else set())


def named_after(stem: str, names: set[str]) -> bool:
    return any(stem == n or stem.startswith(n + "_") for n in names)


def misplaced(test_file: Path, unit: Path = UNIT) -> str | None:
    """Why ``test_file`` (under ``unit``, tests/unit) is not where the layout puts it, or None."""
    rel = test_file.relative_to(unit)
    *folders, name = rel.parts
    stem = name.removesuffix(".py").removeprefix("test_")
    target = REPO.joinpath(*folders)
    if not folders:
        if name in WHOLE_REPOSITORY or named_after(stem, module_names(REPO, packages=False)):
            return None
        return f"{rel}: no root module {stem}.py; move it to tests/unit/<package>/test_<module>.py"
    in_package = all((REPO.joinpath(*folders[: i + 1]) / "__init__.py").is_file() for i in range(len(folders)))
    if not in_package and not (len(folders) == 1 and folders[0] in NOT_PACKAGE_FOLDERS):
        return f"{rel}: {'/'.join(folders)} is no package of smart_agent"
    if not (unit.joinpath(*folders) / "__init__.py").is_file():
        # the test modules are unit.<package>.test_<module>: two packages may each have a test_store.py
        return f"{rel}: {'/'.join(folders)} has no __init__.py"
    if named_after(stem, module_names(target) | {folders[-1]}):
        return None
    return f"{rel}: {'/'.join(folders)} has no module {stem.split('_')[0]!r}: name the file test_<module>.py"


def unit_test_files() -> list[Path]:
    return sorted(p for p in UNIT.rglob("test_*.py") if "__pycache__" not in p.parts)


def test_every_unit_test_file_is_named_after_a_package_and_module():
    assert len(unit_test_files()) > 40  # the scan sees the suite
    problems = [why for path in unit_test_files() if (why := misplaced(path))]
    assert not problems, "\n".join(problems)


def test_a_misplaced_file_is_named_with_where_it_may_go(tmp_path):
    assert misplaced(UNIT / "test_state.py") is None
    assert misplaced(UNIT / "memory" / "test_store_index.py") is None
    assert misplaced(UNIT / "nodes" / "planner" / "test_plan.py") is None
    assert misplaced(UNIT / "history" / "test_history.py") is None
    assert misplaced(UNIT / "test_memory.py") == (
        "test_memory.py: no root module memory.py; move it to tests/unit/<package>/test_<module>.py"
    )
    assert misplaced(UNIT / "test_memory_store.py") == (
        "test_memory_store.py: no root module memory_store.py; move it to tests/unit/<package>/test_<module>.py"
    )
    assert misplaced(UNIT / "memory" / "test_nothing.py") == (
        "memory/test_nothing.py: memory has no module 'nothing': name the file test_<module>.py"
    )
    assert misplaced(UNIT / "storage" / "test_store.py") == (
        "storage/test_store.py: storage is no package of smart_agent"
    )
    assert misplaced(UNIT / "tests" / "test_x.py") == "tests/test_x.py: tests is no package of smart_agent"
    (tmp_path / "memory").mkdir()
    no_init = misplaced(tmp_path / "memory" / "test_store.py", tmp_path)
    assert no_init == "memory/test_store.py: memory has no __init__.py"
