"""End to end: two separate ``smart-agent run`` processes (different threads) share
long-term memory, with the network cut off and no Hugging Face cache or offline flag."""

from __future__ import annotations

import json

from conftest import cli_env, run_cli

from smart_agent.testing.scripted_server import text

# Loaded by every Python process of the test (PYTHONPATH): any connection to a
# non-loopback address or name lookup is logged and refused.
NO_NETWORK = '''
import os, socket
_LOG = os.environ["NET_ATTEMPTS_LOG"]
_LOCAL = {"127.0.0.1", "::1", "localhost", None}

def _refuse(what):
    with open(_LOG, "a") as fh:
        fh.write(repr(what) + "\\n")
    raise OSError(f"network disabled in this test: {what!r}")

_connect, _connect_ex, _gai = socket.socket.connect, socket.socket.connect_ex, socket.getaddrinfo

def connect(self, address):
    if isinstance(address, tuple) and address[0] not in _LOCAL:
        _refuse(address)
    return _connect(self, address)

def connect_ex(self, address):
    if isinstance(address, tuple) and address[0] not in _LOCAL:
        _refuse(address)
    return _connect_ex(self, address)

def getaddrinfo(host, *args, **kwargs):
    if host not in _LOCAL:
        _refuse(host)
    return _gai(host, *args, **kwargs)

socket.socket.connect, socket.socket.connect_ex, socket.getaddrinfo = connect, connect_ex, getaddrinfo
'''


def test_two_cli_runs_share_memory_offline(scripted_server, tmp_path, isolated_home):
    def responder(req):
        system = req["messages"][0]["content"]
        return text("Your favourite colour is teal." if "teal" in system else "Noted.")

    srv = scripted_server(responder=responder)
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(NO_NETWORK)
    attempts = tmp_path / "net-attempts.log"
    env = cli_env(srv, PYTHONPATH=str(site), NET_ATTEMPTS_LOG=str(attempts), HF_HOME=str(tmp_path / "empty-hf-home"))
    for var in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "SMART_AGENT_MEMORY", "SENTENCE_TRANSFORMERS_HOME"):
        env.pop(var, None)

    first = run_cli(
        ["run", "Remember that my favourite colour is teal", "--thread", "one", "--json"], env=env, timeout=240
    )
    assert first.returncode == 0, first.stderr
    assert json.loads(first.stdout)["answer"] == "Noted."
    memory_lines = [ln for ln in first.stderr.splitlines() if "◇ memory:" in ln]
    assert len(memory_lines) == 2 and "[memory_" not in first.stderr, first.stderr  # recalled + stored, no error

    second = run_cli(["run", "What is my favourite colour?", "--thread", "two", "--json"], env=env, timeout=240)
    assert second.returncode == 0, second.stderr
    assert json.loads(second.stdout)["answer"] == "Your favourite colour is teal."

    system = srv.requests[1]["messages"][0]["content"]
    assert "Long-term memory" in system
    assert "Task: Remember that my favourite colour is teal" in system
    assert "User asked to remember: my favourite colour is teal" in system
    # The second run is a new thread: only memory can have carried the fact over.
    assert [m["role"] for m in srv.requests[1]["messages"]] == ["system", "user"]
    assert not attempts.exists(), attempts.read_text()
    assert (isolated_home / "memory" / "memory.sqlite3").exists()

    listed = run_cli(["memory", "list", "--json"], env=env)
    texts = [m["text"] for m in json.loads(listed.stdout)["memories"]]
    assert len(texts) == 2 and any("teal" in t for t in texts)
