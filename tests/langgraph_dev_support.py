"""The `dev_server` fixture: `langgraph dev` serving the graphs against a scripted
OpenAI-compatible server (imported by the tests that talk to it through langgraph_sdk)."""

import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
from conftest import REPO, cli_env


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def dev_server_env():
    """Extra environment of the `langgraph dev` process (a test module overrides this fixture)."""
    return {}


@pytest.fixture
def dev_server(scripted_server, tmp_path, request, dev_server_env):
    """Start `langgraph dev` whose graphs talk to a scripted OpenAI-compatible server
    (long-term memory off unless the test parametrizes the fixture with "memory")."""
    srv = scripted_server([])
    port = _free_port()
    env = cli_env(
        srv,
        LANGGRAPH_CLI_NO_ANALYTICS="1",
        LANGGRAPH_NO_VERSION_CHECK="1",
        SMART_AGENT_WORKSPACE=str(tmp_path),
        SMART_AGENT_MEMORY="true" if getattr(request, "param", "") == "memory" else "false",
        SMART_AGENT_HOME=str(tmp_path / "home"),
        **dev_server_env,
    )
    exe = Path(sys.executable).with_name("langgraph")
    with open(tmp_path / "langgraph-dev.log", "w") as log:  # the server keeps its own copy of the file
        proc = subprocess.Popen(
            [str(exe), "dev", "--no-browser", "--no-reload", "--host", "127.0.0.1", "--port", str(port)],
            cwd=REPO, env=env, stdout=log, stderr=subprocess.STDOUT,
        )
    url = f"http://127.0.0.1:{port}"
    deadline = time.time() + 60
    while time.time() < deadline:
        if proc.poll() is not None:
            raise AssertionError("langgraph dev exited:\n" + (tmp_path / "langgraph-dev.log").read_text()[-3000:])
        try:
            if httpx.get(f"{url}/ok", timeout=1).status_code == 200:
                break
        except httpx.HTTPError:
            time.sleep(0.3)
    else:
        proc.kill()
        raise AssertionError("langgraph dev did not start:\n" + (tmp_path / "langgraph-dev.log").read_text()[-3000:])
    yield url, srv
    proc.terminate()
    try:
        proc.wait(10)
    except subprocess.TimeoutExpired:
        proc.kill()
