"""The thread lock across processes, on SQLite (file lock) and Postgres (advisory lock).

A second process on a held thread waits until the holder releases it; after the
configured wait it is refused with one clear line and the run writes nothing; a
holder that dies releases the lock."""

from __future__ import annotations

import asyncio
import subprocess
import sys

import pytest
from conftest import cli_env, run_cli

from smart_agent.sessions.thread_lock import ThreadBusyError, lock_path, thread_lock

HOLDER = """
import asyncio, sys
from smart_agent.sessions.thread_lock import thread_lock

async def main():
    async with thread_lock(sys.argv[1], url=sys.argv[2] or None, timeout_s=60):
        print("held", flush=True)
        await asyncio.to_thread(sys.stdin.readline)
        print("releasing", flush=True)

asyncio.run(main())
"""


@pytest.fixture(params=["sqlite", "postgres"])
def db_url(request):
    """None (SQLite in $SMART_AGENT_HOME) or the session's real Postgres."""
    return request.getfixturevalue("pg_url") if request.param == "postgres" else None


class Holder:
    """Another process holding ``thread_id``'s lock until ``release()``."""

    def __init__(self, thread_id: str, url: str | None) -> None:
        self.proc = subprocess.Popen([sys.executable, "-c", HOLDER, thread_id, url or ""],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.stdin, self.stdout = self.proc.stdin, self.proc.stdout
        assert self.stdout.readline().strip() == "held"

    def release(self) -> None:
        self.stdin.write("\n")
        self.stdin.flush()

    def close(self) -> str:
        self.stdin.close()
        out = self.stdout.read()
        self.proc.wait(60)
        return out


@pytest.mark.e2e
async def test_second_process_waits_for_the_first(db_url):
    holder = Holder("t-wait", db_url)
    order: list[str] = []

    async def second() -> None:
        async with thread_lock("t-wait", url=db_url, timeout_s=60):
            order.append("acquired")

    task = asyncio.create_task(second())
    await asyncio.sleep(0.5)
    assert not task.done()  # the holder still holds it
    order.append("release sent")
    holder.release()
    await task
    assert order == ["release sent", "acquired"]
    assert holder.close().strip() == "releasing"


@pytest.mark.e2e
async def test_timeout_refuses_with_one_clear_line(db_url):
    holder = Holder("t-busy", db_url)
    try:
        with pytest.raises(ThreadBusyError) as err:
            async with thread_lock("t-busy", url=db_url, timeout_s=0.3):
                pytest.fail("entered a held thread")
        message = str(err.value)
        assert "\n" not in message and "'t-busy' is busy" in message and "SMART_AGENT_THREAD_LOCK_TIMEOUT" in message
        async with thread_lock("t-other", url=db_url, timeout_s=0):  # other threads are not blocked
            pass
    finally:
        holder.close()


@pytest.mark.e2e
async def test_a_killed_holder_releases_the_thread(db_url):
    holder = Holder("t-crash", db_url)
    holder.proc.kill()
    holder.proc.wait(60)
    async with thread_lock("t-crash", url=db_url, timeout_s=30):
        pass


@pytest.mark.e2e
def test_cli_run_on_a_busy_thread_is_refused_and_writes_nothing(scripted_server, workspace, db_url):
    from smart_agent.testing.scripted_server import text

    srv = scripted_server(responder=lambda req: text("should not be asked"))
    env = cli_env(srv, SMART_AGENT_THREAD_LOCK_TIMEOUT="0.5", **({"SMART_AGENT_DB": db_url} if db_url else {}))
    holder = Holder("t-cli-busy", db_url)
    try:
        proc = run_cli(["run", "hello", "--thread", "t-cli-busy", "--workspace", str(workspace)], env=env)
    finally:
        holder.close()
    assert proc.returncode == 1
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "'t-cli-busy' is busy" in lines[0] and "nothing was written" in lines[0], proc.stderr
    assert srv.requests == []

    async def checkpoint():
        from smart_agent.sessions.store import open_checkpointer

        async with open_checkpointer(url=db_url) as saver:
            return await saver.aget_tuple({"configurable": {"thread_id": "t-cli-busy"}})

    assert asyncio.run(checkpoint()) is None


@pytest.mark.e2e
def test_bad_timeout_setting_is_one_line_usage_error(scripted_server, workspace):
    srv = scripted_server(responder=lambda req: {"content": "unused"})
    proc = run_cli(["run", "hi", "--thread", "t", "--workspace", str(workspace)],
                   env=cli_env(srv, SMART_AGENT_THREAD_LOCK_TIMEOUT="soon"))
    assert proc.returncode == 2
    assert proc.stderr.strip() == "smart-agent: SMART_AGENT_THREAD_LOCK_TIMEOUT must be a number of seconds, got 'soon'"
    assert srv.requests == []


@pytest.mark.unit
def test_sqlite_lock_files_are_per_database(tmp_path, isolated_home):
    a, b = str(tmp_path / "a.sqlite"), str(tmp_path / "b.sqlite")
    assert lock_path("t", a) != lock_path("t", b) != lock_path("t")
    assert lock_path("t").parent == isolated_home / "locks"
    assert lock_path("t", a).parent == tmp_path / "a.sqlite.locks"


@pytest.mark.e2e
@pytest.mark.parametrize("command", ["chat", "demo", "execute"])
def test_every_thread_command_takes_the_lock(command, scripted_server, workspace, tmp_path):
    srv = scripted_server(responder=lambda req: {"content": "should not be asked"})
    plan = tmp_path / "plan.json"
    plan.write_text('{"steps": [{"id": "a", "tool": "calculator", "args": {"expression": "1+1"}}]}')
    args = {"chat": ["chat", "--thread", "t-cmd", "--workspace", str(workspace)],
            "demo": ["demo", "--thread", "t-cmd", "--workspace", str(workspace)],
            "execute": ["execute", str(plan), "--thread", "t-cmd", "--workspace", str(workspace), "--json"]}[command]
    holder = Holder("t-cmd", None)
    try:
        proc = run_cli(args, env=cli_env(srv, SMART_AGENT_THREAD_LOCK_TIMEOUT="0.5"), input_text="hello\n")
    finally:
        holder.close()
    assert proc.returncode == 1, (proc.stdout, proc.stderr)
    assert "'t-cmd' is busy" in proc.stderr.strip().splitlines()[-1]
    if command == "chat":  # demo brings its own model server; execute asks none
        assert srv.requests == []
