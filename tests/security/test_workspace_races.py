"""Attack: the file system changes under the file tools - a symbolic link swapped in
between the check and the open, a hard link to an outside file, a FIFO - and oversized
writes. The tools are called the way the tools node calls them (injected runtime)."""

from __future__ import annotations

import ctypes
import os
import sys
import threading
from pathlib import Path
from typing import Any

import pytest
from langchain.tools import ToolRuntime
from tool_support import function_of, make_runtime

from smart_agent.config.context import Context
from smart_agent.tools.files import read_file, write_file
from smart_agent.tools.guards import ToolError

# The functions under the tools, called directly (the tools node injects the runtime the same way).
read_file_fn = function_of(read_file)
write_file_fn = function_of(write_file)

OUTSIDE_SECRET = "OUTSIDE SECRET"
ROUNDS = 2000


_libc = ctypes.CDLL(None, use_errno=True)
_AT_FDCWD, _RENAME_EXCHANGE = -100, 2


def exchange(a: Path, b: Path) -> None:
    """Swap two names atomically (Linux renameat2 RENAME_EXCHANGE): there is no moment without either."""
    if _libc.renameat2(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE) != 0:
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err), str(a))


def runtime(workspace: Path, **context: Any) -> ToolRuntime:
    """A tool runtime in ``workspace`` with memory off (test_workspace_search.py uses it too)."""
    return make_runtime(workspace, memory=False, **context)


@pytest.fixture
def dirs(tmp_path: Path) -> tuple[Path, Path]:
    ws, outside = tmp_path / "ws", tmp_path / "outside"
    ws.mkdir()
    outside.mkdir()
    (outside / "secret.txt").write_text(OUTSIDE_SECRET)
    return ws, outside


@pytest.mark.e2e  # 2000 rounds against a swapping thread: 10-20 s alone, so only in the full run
def test_symlink_swapped_during_calls_never_redirects_an_access(dirs: tuple[Path, Path]) -> None:
    ws, outside = dirs
    rt = runtime(ws)
    (outside / "victim.txt").write_text("original")
    real = ws / "real"
    real.mkdir()
    (real / "secret.txt").write_text("inside")
    (ws / "f.txt").write_text("inside")
    (ws / "r.txt").write_text("inside")
    (ws / "d").symlink_to(outside, target_is_directory=True)
    (ws / "f.link").symlink_to(outside / "victim.txt")
    (ws / "r.link").symlink_to(outside / "secret.txt")
    stop = threading.Event()
    swaps, swap_errors = [0], []

    def swapper() -> None:  # atomically exchange a real folder / file with a link to the outside, over and over
        try:
            while not stop.is_set():
                exchange(ws / "d", real)
                exchange(ws / "f.txt", ws / "f.link")
                exchange(ws / "r.txt", ws / "r.link")
                swaps[0] += 1
        except OSError as exc:
            swap_errors.append(exc)

    outcomes = {"ok": 0, "refused": 0}
    leaked_reads = 0
    old_interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # switch threads as often as possible: widen every race window
    thread = threading.Thread(target=swapper, daemon=True)
    thread.start()
    try:
        for i in range(ROUNDS):
            for call in (lambda i=i: write_file_fn(f"d/w{i % 7}.txt", f"pwned {i}", runtime=rt),
                         lambda i=i: write_file_fn("f.txt", f"pwned {i}", runtime=rt),
                         lambda: read_file_fn("d/secret.txt", runtime=rt),
                         lambda: read_file_fn("r.txt", runtime=rt)):
                try:
                    result = call()
                except ToolError:
                    outcomes["refused"] += 1
                    continue
                outcomes["ok"] += 1
                leaked_reads += OUTSIDE_SECRET in result
    finally:
        stop.set()
        thread.join()
        sys.setswitchinterval(old_interval)

    assert swap_errors == []
    # no write landed outside, no read returned the outside file
    assert sorted(p.name for p in outside.iterdir()) == ["secret.txt", "victim.txt"]
    assert (outside / "victim.txt").read_text() == "original"
    assert leaked_reads == 0
    # the race was really run: the links were swapped while calls both succeeded and were refused
    assert swaps[0] > 0 and outcomes["ok"] > 0 and outcomes["refused"] > 0, (swaps, outcomes)


@pytest.mark.unit
def test_symlinks_inside_the_workspace_are_refused(dirs: tuple[Path, Path]) -> None:
    ws, _ = dirs
    rt = runtime(ws)
    (ws / "sub").mkdir()
    (ws / "sub" / "a.txt").write_text("a")
    (ws / "alias").symlink_to(ws / "sub", target_is_directory=True)
    (ws / "a-link.txt").symlink_to(ws / "sub" / "a.txt")
    for path in ["alias/a.txt", "a-link.txt"]:
        with pytest.raises(ToolError, match="symbolic link; refused"):
            read_file_fn(path, runtime=rt)
        with pytest.raises(ToolError, match="symbolic link; refused"):
            write_file_fn(path, "b", runtime=rt)
    assert (ws / "sub" / "a.txt").read_text() == "a"


@pytest.mark.unit
def test_hard_link_to_an_outside_file_is_not_written(dirs: tuple[Path, Path]) -> None:
    ws, outside = dirs
    os.link(outside / "secret.txt", ws / "notes.txt")
    with pytest.raises(ToolError, match="hard links"):
        write_file_fn("notes.txt", "pwned", runtime=runtime(ws))
    assert (outside / "secret.txt").read_text() == OUTSIDE_SECRET


def _in_thread(fn: Any) -> tuple[threading.Thread, dict[str, Any]]:
    box: dict[str, Any] = {}

    def target() -> None:
        try:
            box["result"] = fn()
        except Exception as exc:  # the test inspects it
            box["error"] = exc

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    return thread, box


@pytest.mark.unit
@pytest.mark.parametrize("tool", ["read_file", "write_file"])
def test_fifo_is_refused_without_blocking(dirs: tuple[Path, Path], tool: str) -> None:
    ws, _ = dirs
    fifo = ws / "pipe"
    os.mkfifo(fifo)
    rt = runtime(ws, tool_timeout_s=5)
    fn = (
        (lambda: read_file_fn("pipe", runtime=rt))
        if tool == "read_file"
        else (lambda: write_file_fn("pipe", "x", runtime=rt))
    )
    thread, box = _in_thread(fn)
    thread.join(timeout=5 + 10)  # the run's tool timeout + 10 s: a blocked open fails the test instead of hanging it
    try:
        assert not thread.is_alive(), f"{tool} blocked on a FIFO"
        assert isinstance(box.get("error"), ToolError) and "not a regular file" in str(box["error"])
    finally:
        if thread.is_alive():  # release the blocked open so the process can end
            other = os.O_WRONLY if tool == "read_file" else os.O_RDONLY
            os.close(os.open(fifo, other | os.O_NONBLOCK))


@pytest.mark.unit
def test_write_cap_refuses_before_anything_is_written(dirs: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    ws, _ = dirs
    rt = runtime(ws, max_write_bytes=100)
    content = "é" * 51  # 51 characters, 102 bytes in UTF-8: the cap counts bytes
    with pytest.raises(ToolError, match=r"102 bytes, more than this run's max_write_bytes \(100\)"):
        write_file_fn("new/dir/big.txt", content, runtime=rt)
    assert list(ws.iterdir()) == []  # not even the parent folders
    (ws / "kept.txt").write_text("old")
    with pytest.raises(ToolError, match="max_write_bytes"):
        write_file_fn("kept.txt", content, runtime=rt)
    assert (ws / "kept.txt").read_text() == "old"  # not truncated
    assert write_file_fn("ok.txt", "é" * 50, runtime=rt) == "Wrote 50 characters to ok.txt"
    assert (ws / "ok.txt").read_text() == "é" * 50
    monkeypatch.setenv("SMART_AGENT_MAX_WRITE_BYTES", "10")
    with pytest.raises(ToolError, match=r"max_write_bytes \(10\)"):
        write_file_fn("env.txt", "x" * 11, runtime=runtime(ws))
    with pytest.raises(ValueError, match="max_write_bytes"):
        Context(max_write_bytes=0)
