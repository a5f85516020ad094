"""Ctrl-C on a terminal (a pseudo-terminal driven by pexpect): in ``smart-agent chat`` at the
``you>`` prompt and in the middle of a turn, and in a run whose answer is streaming, one Ctrl-C
exits 130 at once, and the thread keeps what was done (the next run on it sees the earlier turns;
a stopped turn resumes). The tests synchronise on the prompt and on the server holding a request
or a stream, never on the clock."""

from __future__ import annotations

import json
import os
import signal
import sys
import threading
from pathlib import Path

import pexpect
from conftest import cli_env, run_cli

from smart_agent.testing.scripted_server import text


def spawn(args, env):
    exe = Path(sys.executable).with_name("smart-agent")
    return pexpect.spawn(str(exe), list(args), env=env, encoding="utf-8", timeout=90, dimensions=(50, 200))


def users_then(prefix):
    """A responder answering ``prefix`` and every user line of the request."""
    return lambda req: text(prefix + " | ".join(m["content"] for m in req["messages"] if m["role"] == "user"))


def test_ctrl_c_at_the_chat_prompt_exits_130_and_keeps_the_thread(scripted_server, workspace):
    srv = scripted_server([text("noted")], responder=users_then("seen: "))
    env = cli_env(srv)
    child = spawn(["chat", "--thread", "cc-prompt", "--workspace", str(workspace)], env)
    child.expect_exact("you> ")
    child.sendline("my number is 4711")
    child.expect_exact("noted")
    child.expect_exact("you> ")
    child.sendintr()  # nothing runs: the read of the next line is what Ctrl-C stops
    child.expect(pexpect.EOF)  # (it used to wait for one more line before exiting)
    child.close()
    assert child.exitstatus == 130
    again = run_cli(["run", "what is my number?", "--thread", "cc-prompt", "--json"], env=env)
    assert again.returncode == 0, again.stderr
    assert json.loads(again.stdout)["answer"] == "seen: my number is 4711 | what is my number?"


def test_ctrl_c_in_a_chat_turn_exits_130_and_the_turn_resumes(scripted_server, workspace):
    arrived, release = threading.Event(), threading.Event()

    def held(_req):  # the second turn's request: held until the CLI was interrupted
        arrived.set()
        release.wait(60)
        return text("never shown")

    srv = scripted_server([text("noted"), held], responder=users_then("again: "))
    env = cli_env(srv)
    child = spawn(["chat", "--thread", "cc-turn", "--workspace", str(workspace)], env)
    child.expect_exact("you> ")
    child.sendline("first line")
    child.expect_exact("noted")
    child.expect_exact("you> ")
    child.sendline("second line")
    assert arrived.wait(60)  # the turn's model call is under way
    child.sendintr()
    child.expect_exact("smart-agent resume --thread cc-turn")
    child.expect(pexpect.EOF)
    child.close()
    release.set()
    assert child.exitstatus == 130
    assert "never shown" not in child.before
    resumed = run_cli(["resume", "--thread", "cc-turn", "--json"], env=env)
    assert resumed.returncode == 0, resumed.stderr
    assert json.loads(resumed.stdout)["answer"] == "again: first line | second line"  # the stopped turn, run again


def test_one_ctrl_c_stops_a_run_whose_answer_is_streaming(scripted_server, workspace):
    # the answer's stream has begun and the server holds the rest: one SIGINT must end the run (on Python 3.11
    # langchain-openai's per-chunk asyncio.wait_for lost it, and the run waited for a second Ctrl-C)
    held = {"content": "never shown", "pause_after": 0, "pause_s": 300}
    srv = scripted_server([held], responder=users_then("again: "))
    env = cli_env(srv)
    child = spawn(["run", "stream this", "--thread", "cc-stream", "--workspace", str(workspace)], env)
    assert srv.stream_paused.wait(60)
    os.kill(child.pid, signal.SIGINT)  # once
    child.expect_exact("smart-agent resume --thread cc-stream")
    child.expect(pexpect.EOF)
    child.close()
    srv.release_stream()
    assert child.exitstatus == 130
    resumed = run_cli(["resume", "--thread", "cc-stream", "--json"], env=env)
    assert resumed.returncode == 0, resumed.stderr
    assert json.loads(resumed.stdout)["answer"] == "again: stream this"
