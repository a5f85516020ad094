"""Attack: ``smart-agent chat`` fed lines that are not valid UTF-8 (or hold a NUL byte).

Before: the line reached the model request with lone surrogates in it, and the run
ended with a misleading ``ModelReplyError`` (exit 1) - or, with a strict stdin
encoding, a ``UnicodeDecodeError``. Now each line is decoded strictly on its own
(whatever the locale): a bad line is skipped with one error line on stderr and never
sent; the other lines still run; the exit code is 2 when a line was refused.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from conftest import cli_env

from smart_agent.testing.scripted_server import text, tool_call

pytestmark = pytest.mark.e2e  # the chat CLI in a separate process


def chat(srv, workspace, data: bytes, **env) -> subprocess.CompletedProcess:
    exe = Path(sys.executable).with_name("smart-agent")
    cmd = [str(exe)] if exe.exists() else [sys.executable, "-m", "smart_agent.cli"]
    return subprocess.run([*cmd, "chat", "--quiet", "--workspace", str(workspace)], env=cli_env(srv, **env),
                          input=data, capture_output=True, timeout=120, check=False)  # fmt: skip


def error_lines(res) -> list[str]:
    err = res.stderr.decode()
    assert "Traceback" not in err and "ModelReplyError" not in err, err
    return [line for line in err.splitlines() if "error" in line]


@pytest.mark.parametrize("stdin_encoding", [None, "utf-8:strict"])
def test_an_undecodable_line_is_refused_alone_and_the_others_run(scripted_server, workspace, stdin_encoding):
    srv = scripted_server([text("first answer"), text("second answer")])
    env = {"PYTHONIOENCODING": stdin_encoding} if stdin_encoding else {}
    res = chat(srv, workspace, b"hello\nbad \xff\xfe line\nbye\n", **env)
    assert res.returncode == 2, res.stderr
    assert error_lines(res) == [
        "smart-agent chat: error: input line 2 is not valid UTF-8 text (byte 5: b'\\xff'); skipped"
    ]
    assert res.stdout.decode().splitlines() == ["first answer", "second answer"]
    assert [r["messages"][-1]["content"] for r in srv.requests] == ["hello", "bye"]


def test_input_that_is_all_bad_sends_nothing_and_exits_2(scripted_server, workspace):
    srv = scripted_server([text("never")])
    res = chat(srv, workspace, b"hi\xff\nnul \x00 byte\n")
    assert res.returncode == 2, res.stderr
    assert error_lines(res) == [
        "smart-agent chat: error: input line 1 is not valid UTF-8 text (byte 3: b'\\xff'); skipped",
        "smart-agent chat: error: input line 2 contains a NUL byte; skipped",
    ]
    assert res.stdout == b"" and srv.requests == []


# -- a question of the model (ask_user, on in chat) on piped input ---------------------------
# Before: piped chat stopped at the first ask_user question (exit 3) and the rest of stdin was
# never read. Now the next line answers the question and the lines after it are the next turns.
def asks_then_answers(req):
    last = req["messages"][-1]
    if last["role"] == "tool":
        return text(f"you chose {last['content']}")
    if last["content"] == "paint it":
        return tool_call("ask_user", {"question": "Which colour?"})
    return text(f"turn: {last['content']}")


def test_piped_chat_answers_a_question_from_the_next_line_and_goes_on(scripted_server, workspace):
    srv = scripted_server(responder=asks_then_answers)
    res = chat(srv, workspace, b"paint it\nteal\nand then?\n")
    assert res.returncode == 0, res.stderr
    assert res.stdout.decode().splitlines() == ["you chose teal", "turn: and then?"]
    assert [r["messages"][-1]["content"] for r in srv.requests] == ["paint it", "teal", "and then?"]
    assert srv.requests[1]["messages"][-1]["role"] == "tool"  # the answer went to the question


def test_piped_chat_answer_lines_are_checked_like_turns(scripted_server, workspace):
    srv = scripted_server(responder=asks_then_answers)
    res = chat(srv, workspace, b"paint it\nbad \xff\nteal\n")
    assert res.returncode == 2, res.stderr  # a line was refused
    assert error_lines(res) == [
        "smart-agent chat: error: input line 2 is not valid UTF-8 text (byte 5: b'\\xff'); skipped"
    ]
    assert res.stdout.decode().splitlines() == ["you chose teal"]


def test_piped_chat_that_ends_before_the_answer_says_why_it_stopped(scripted_server, workspace):
    srv = scripted_server(responder=asks_then_answers)
    res = chat(srv, workspace, b"paint it\n")
    assert res.returncode == 3, res.stderr
    err = res.stderr.decode()
    assert "1 question(s) wait for an answer" in err and "smart-agent resume" in err and "Traceback" not in err
