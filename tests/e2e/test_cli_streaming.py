"""On a terminal (a pseudo-terminal driven by pexpect) the answer streams: its first words are
on screen while the scripted server still holds the rest, and a status line says what runs
while the model is silent; through a pipe or with --json the output has no escape sequences.

The test and the server synchronise on the server's pause (``pause_after``, ``stream_paused``,
``release_stream``), never on the clock."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pexpect
from conftest import cli_env, run_cli

from smart_agent.testing.scripted_server import text, tool_call

FIRST = "The first part of the answer"  # 6 words: pause_after 6
REST = "and the rest after the pause."


def spawn(args, env):
    exe = Path(sys.executable).with_name("smart-agent")
    return pexpect.spawn(str(exe), list(args), env=env, encoding="utf-8", timeout=90, dimensions=(50, 200))


def finish(child) -> tuple[int, str]:
    child.expect(pexpect.EOF)
    rest = child.before
    child.close()
    return child.exitstatus, rest


def test_answer_streams_on_a_terminal_before_the_server_sends_the_rest(scripted_server, workspace):
    srv = scripted_server([{"content": f"{FIRST} {REST}", "pause_after": 6, "pause_s": 300}])
    child = spawn(["run", "tell me", "--workspace", str(workspace), "--thread", "stream1"], cli_env(srv))
    assert srv.stream_paused.wait(60)
    child.expect_exact(FIRST)  # on screen...
    assert srv.streamed_text.strip() == FIRST  # ...while the server has sent nothing more
    srv.release_stream()
    child.expect_exact(REST)
    code, tail = finish(child)
    assert code == 0
    assert FIRST not in tail  # the answer is not printed a second time after it streamed
    assert "(thread stream1" in tail


def test_status_line_while_the_model_is_silent_then_erased(scripted_server, workspace):
    srv = scripted_server([{"content": "Done now.", "pause_after": 0}])  # the stream opens, no word yet
    child = spawn(["run", "wait", "--workspace", str(workspace)], cli_env(srv))
    assert srv.stream_paused.wait(60)
    child.expect(r"waiting for the model · \d+\.\d s")  # the spinner line, with the seconds
    srv.release_stream()
    child.expect_exact("Done now.")
    screen = child.before  # everything between the status line and the answer
    code, _tail = finish(child)
    assert code == 0
    assert "\x1b[2K" in screen  # the status line was erased before the answer was written


def test_piped_and_json_output_have_no_escape_sequences(scripted_server, workspace):
    def model(req):
        if not [m for m in req["messages"] if m["role"] == "tool"]:
            return {**tool_call("calculator", {"expression": "6*7"}), "content": "Let me compute that."}
        return text("It is 42.")

    srv = scripted_server(responder=model)
    res = run_cli(["run", "6*7?", "--workspace", str(workspace)], env=cli_env(srv))
    assert res.returncode == 0, res.stderr
    assert "\x1b" not in res.stdout + res.stderr
    assert "  💬 Let me compute that." in res.stdout  # the text beside the tool call, as a line
    assert res.stdout.count("It is 42.") == 1
    res = run_cli(["run", "6*7?", "--json", "--workspace", str(workspace)], env=cli_env(srv))
    assert res.returncode == 0, res.stderr
    assert "\x1b" not in res.stdout + res.stderr
    assert json.loads(res.stdout)["answer"] == "It is 42."


def test_quiet_on_a_terminal_shows_only_the_answer(scripted_server, workspace):
    def model(req):
        if not [m for m in req["messages"] if m["role"] == "tool"]:
            return tool_call("calculator", {"expression": "6*7"})
        return text("It is 42.")

    srv = scripted_server(responder=model)
    child = spawn(["run", "6*7?", "--quiet", "--workspace", str(workspace)], cli_env(srv))
    code, out = finish(child)
    assert code == 0
    assert out.strip() == "It is 42."


def test_chat_streams_each_answer_on_a_terminal(scripted_server):
    srv = scripted_server([{"content": f"{FIRST} {REST}", "pause_after": 6, "pause_s": 300}, text("Second answer.")])
    child = spawn(["chat", "--thread", "stream-chat"], cli_env(srv))
    child.expect_exact("you> ")
    child.sendline("first question")
    assert srv.stream_paused.wait(60)
    child.expect_exact(f"agent> {FIRST}")  # on screen while the server holds the rest
    assert srv.streamed_text.strip() == FIRST
    srv.release_stream()
    child.expect_exact(REST)
    child.expect_exact("you> ")
    assert FIRST not in child.before  # not printed a second time
    child.sendline("second question")
    child.expect_exact("agent> Second answer.")
    child.expect_exact("you> ")
    child.sendline("/exit")
    code, _tail = finish(child)
    assert code == 0
