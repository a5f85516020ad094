"""On a terminal (a pseudo-terminal driven by pexpect), `run` shows the calls waiting for
review or the question and asks; the answer resumes the run in the same process."""

from __future__ import annotations

import sys
from pathlib import Path

import pexpect
from conftest import cli_env

from smart_agent.testing.scripted_server import text, tool_call

PROMPT = r"\[a\]pprove / \[e\]dit / \[r\]eject \[message\]: "


def writer(req):
    results = [m for m in req["messages"] if m["role"] == "tool"]
    if not results:
        return tool_call("write_file", {"path": "out.txt", "content": "hello"})
    return text("done: " + results[-1]["content"])


def spawn(args, env):
    exe = Path(sys.executable).with_name("smart-agent")
    child = pexpect.spawn(str(exe), list(args), env=env, encoding="utf-8", timeout=90, dimensions=(50, 250))
    return child


def finish(child) -> int:
    child.expect(pexpect.EOF)
    child.close()
    return child.exitstatus


def run_args(workspace, thread, *extra):
    return ["run", "write the file", "--workspace", str(workspace), "--approve", "write_file", "--thread", thread,
            *extra]


def test_terminal_approve_and_reject(scripted_server, workspace):
    srv = scripted_server(responder=writer)
    env = cli_env(srv)
    child = spawn(run_args(workspace, "tty1"), env)
    child.expect("write_file waits for your approval")
    child.expect(r'args: \{"content": "hello", "path": "out.txt"\}')
    child.expect(PROMPT)
    assert not (workspace / "out.txt").exists()  # nothing runs while the question is open
    child.sendline("what?")
    child.expect("answer a, e or r")
    child.expect(PROMPT)
    child.sendline("a")
    child.expect("done: Wrote 5 characters")
    assert finish(child) == 0
    assert (workspace / "out.txt").read_text() == "hello"

    (workspace / "out.txt").unlink()
    child = spawn(run_args(workspace, "tty2"), env)
    child.expect(PROMPT)
    child.sendline("r no thanks")
    child.expect("rejected write_file: no thanks")
    assert finish(child) == 0
    assert not (workspace / "out.txt").exists()
    assert "no thanks" in srv.requests[-1]["messages"][-1]["content"]


def test_terminal_edit_on_one_line_and_in_the_editor(scripted_server, workspace, tmp_path):
    srv = scripted_server(responder=writer)
    env = cli_env(srv)
    child = spawn(run_args(workspace, "tty3"), env)
    child.expect(PROMPT)
    child.sendline("e")
    child.expect("new arguments as one line of JSON: ")
    child.sendline("{broken")
    child.expect("not valid JSON")
    child.expect(PROMPT)
    child.sendline("e")
    child.expect("one line of JSON: ")
    child.sendline('{"path": "edited.txt", "content": "by hand"}')
    child.expect("done: ")
    assert finish(child) == 0
    assert (workspace / "edited.txt").read_text() == "by hand" and not (workspace / "out.txt").exists()

    editor = tmp_path / "editor.py"  # an $EDITOR that rewrites the arguments file it is given
    editor.write_text(
        "import json, sys\n"
        "args = json.load(open(sys.argv[1]))\n"
        "args['content'] = args['content'].upper()\n"
        "json.dump(args, open(sys.argv[1], 'w'))\n"
    )
    child = spawn(run_args(workspace, "tty4"), {**env, "EDITOR": f"{sys.executable} {editor}"})
    child.expect(PROMPT)
    child.sendline("e")
    child.expect("done: ")
    assert finish(child) == 0
    assert (workspace / "out.txt").read_text() == "HELLO"


def test_terminal_question(scripted_server, workspace):
    def model(req):
        results = [m for m in req["messages"] if m["role"] == "tool"]
        return text("you said " + results[-1]["content"]) if results else tool_call("ask_user", {"question": "Colour?"})

    srv = scripted_server(responder=model)
    child = spawn(["run", "pick", "--ask-user", "--thread", "tty5"], cli_env(srv))
    child.expect(r"\? Colour\?")
    child.expect("answer> ")
    child.sendline("teal")
    child.expect("you said teal")
    assert finish(child) == 0


def test_chat_on_a_terminal_asks_the_question_between_turns(scripted_server):
    def model(req):
        last = req["messages"][-1]
        if last["role"] == "tool":
            return text(f"hi {last['content']}")
        if last["content"] == "hello":
            return tool_call("ask_user", {"question": "Your name?"})
        return text(f"echo {last['content']}")

    srv = scripted_server(responder=model)
    child = spawn(["chat", "--thread", "tty6"], cli_env(srv))  # ask_user is on in chat by default
    child.expect("you> ")
    child.sendline("hello")
    child.expect(r"\? Your name\?")
    child.expect("answer> ")
    child.sendline("Ada")
    child.expect("agent> hi Ada")
    child.expect("you> ")
    child.sendline("again")
    child.expect("agent> echo again")
    child.sendline("/exit")
    assert finish(child) == 0
