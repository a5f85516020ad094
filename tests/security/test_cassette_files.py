"""Attack: a ``--replay DIR`` folder holding something other than cassette files. A FIFO named
``0001.json`` hung the replay (a plain read waits for a writer), a link to ``/dev/zero``
read until MemoryError, a 100k-deep JSON file raised a raw RecursionError, bytes that are
not UTF-8 a raw UnicodeDecodeError. Every one is now one CassetteError line naming the file
(the CLI: exit 2), read with inputs.py's bounds."""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys

import pytest
from conftest import cli_env, run_cli

from smart_agent.cassette import CassetteError, replaying
from smart_agent.cassette import store as cassette_store

MEMORY_BOUND = 4 << 30  # bytes of address space a child may map (a plain read of /dev/zero reaches it)

GOOD = {
    "format": "smart-agent-cassette/1", "seq": 1,
    "request": {"method": "POST", "url": "http://h/v1/chat/completions", "path": "/v1/chat/completions",
                "body": {"model": "m", "messages": [{"role": "user", "content": "hi"}]}},
    "response": {"status": 200, "headers": {"content-type": "application/json"}, "json": {"id": "x"}},
}  # fmt: skip


def folder_with(tmp_path, name="0002.json"):
    """A cassette folder with one good file (0001.json); the attack goes into ``name``."""
    folder = tmp_path / "cassette"
    folder.mkdir()
    (folder / "0001.json").write_text(json.dumps(GOOD))
    return folder, folder / name


def load_in_child(folder, timeout=60):
    """Open the folder for replay in a child process, its address space bounded: a hang or a read
    that never ends cannot take the test run (or the machine's memory) with it."""
    code = (
        "import sys\nfrom smart_agent.cassette import CassetteError, replaying\n"
        f"try:\n    replaying({str(folder)!r})\nexcept CassetteError as exc:\n    print(exc)\n    sys.exit(2)\n"
    )

    def bounded():
        resource.setrlimit(resource.RLIMIT_AS, (MEMORY_BOUND, MEMORY_BOUND))

    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=timeout, preexec_fn=bounded
    )


@pytest.mark.e2e
def test_a_fifo_is_refused_without_blocking(tmp_path):
    folder, fifo = folder_with(tmp_path)
    os.mkfifo(fifo)
    res = load_in_child(folder)  # a plain read waits forever for a writer: the hang guard's TimeoutExpired
    assert res.returncode == 2, res.stderr
    assert res.stdout.strip() == f"cassette file {fifo}: a FIFO (named pipe), not a regular file"


@pytest.mark.e2e
def test_a_link_to_dev_zero_is_refused_unread(tmp_path):
    folder, link = folder_with(tmp_path)
    link.symlink_to("/dev/zero")
    res = load_in_child(folder)  # a plain read: MemoryError at the bound
    assert res.returncode == 2, res.stderr[-2000:]
    assert res.stdout.strip() == f"cassette file {link}: a device, not a regular file"


@pytest.mark.unit
def test_a_file_over_the_bound_is_refused(tmp_path, monkeypatch):
    folder, big = folder_with(tmp_path)
    monkeypatch.setattr(cassette_store, "MAX_FILE_BYTES", 10_000)
    big.write_text(json.dumps({**GOOD, "seq": 2, "pad": "x" * 10_000}))
    with pytest.raises(CassetteError, match=r"cassette file .*0002\.json: larger than 10000 bytes"):
        replaying(folder)


@pytest.mark.unit
def test_a_deeply_nested_file_is_one_line_not_a_recursion_error(tmp_path):
    folder, deep = folder_with(tmp_path)
    deep.write_text("[" * 100_000 + "]" * 100_000)
    with pytest.raises(CassetteError, match=r"cassette file .*0002\.json: nested more than 200 levels deep"):
        replaying(folder)


@pytest.mark.unit
def test_bytes_that_are_not_utf8_are_named(tmp_path):
    folder, bad = folder_with(tmp_path)
    bad.write_bytes(json.dumps(GOOD).encode() + b"\xff")
    with pytest.raises(CassetteError, match=r"cassette file .*0002\.json: not UTF-8 text"):
        replaying(folder)


@pytest.mark.e2e
def test_the_cli_reports_a_bad_cassette_file_in_one_line_with_exit_2(tmp_path):
    folder, deep = folder_with(tmp_path)
    deep.write_text("[" * 100_000 + "]" * 100_000)
    env = cli_env(OPENAI_BASE_URL="http://127.0.0.1:9/v1", SMART_AGENT_MODEL="openai:m")
    res = run_cli(["run", "hi", "--replay", str(folder)], env=env)
    assert res.returncode == 2
    assert res.stderr.strip() == f"smart-agent: cassette file {deep}: nested more than 200 levels deep"


@pytest.mark.unit
def test_good_files_still_load(tmp_path):
    folder, empty = folder_with(tmp_path)
    empty.write_text("")  # a number claimed by a recorder that got no response: skipped, as before
    assert [i.seq for i in replaying(folder).cassette.interactions] == [1]
