"""The `dev_server` fixture: `langgraph dev` serving the graphs against a scripted
OpenAI-compatible server (imported by the tests that talk to it through langgraph_sdk)."""

import json
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
from conftest import REPO, cli_env, free_port


@pytest.fixture
def dev_server_env():
    """Extra environment of the `langgraph dev` process (a test module overrides this fixture)."""
    return {}


@pytest.fixture
def dev_server(scripted_server, tmp_path, request, dev_server_env):
    """Start `langgraph dev` whose graphs talk to a scripted OpenAI-compatible server
    (long-term memory off unless the test parametrizes the fixture with "memory")."""
    srv = scripted_server([])
    env = cli_env(
        srv,
        LANGGRAPH_CLI_NO_ANALYTICS="1",
        LANGGRAPH_NO_VERSION_CHECK="1",
        SMART_AGENT_WORKSPACE=str(tmp_path),
        SMART_AGENT_MEMORY="true" if getattr(request, "param", "") == "memory" else "false",
        SMART_AGENT_HOME=str(tmp_path / "home"),
        **dev_server_env,
    )
    proc, url = start_dev_server(env, tmp_path)
    yield url, srv
    proc.terminate()
    try:
        proc.wait(10)
    except subprocess.TimeoutExpired:
        proc.kill()


def served_config(folder: Path) -> Path:
    """The repository's langgraph.json for a test server, written in ``folder`` with its paths made
    absolute (`langgraph dev` reads the dependencies and the store's embed module relative to its
    working folder), so that the server can run in a folder of its own."""
    config = json.loads((REPO / "langgraph.json").read_text())
    config["dependencies"] = [str((REPO / dep).resolve()) for dep in config["dependencies"]]
    index = config.get("store", {}).get("index", {})
    if "embed" in index and index["embed"].startswith("."):
        module, _, name = index["embed"].partition(":")
        index["embed"] = f"{(REPO / module).resolve()}:{name}"
    path = folder / "langgraph.json"
    path.write_text(json.dumps(config))
    return path


def start_dev_server(env: dict, folder: Path, attempts: int = 3) -> tuple[subprocess.Popen, str]:
    """`langgraph dev` serving the repository's graphs (``served_config``) on a free port, answering:
    the process and its URL. It runs in ``folder``/server, where the in-memory runtime pickles its
    threads (.langgraph_api/): in the repository each server would start with the threads of earlier
    ones, and the servers of parallel test workers would write the same files. Another process may
    take the free port before the server binds it (parallel workers): then a new port, ``attempts``
    times. Its log: ``folder``/langgraph-dev.log."""
    exe = Path(sys.executable).with_name("langgraph")
    log_path, cwd = folder / "langgraph-dev.log", folder / "server"
    cwd.mkdir(exist_ok=True)
    config = ["--config", str(served_config(cwd))]
    for attempt in range(attempts):
        port = free_port()
        with open(log_path, "w") as log:  # the server keeps its own copy of the file
            proc = subprocess.Popen(
                [str(exe), "dev", "--no-browser", "--no-reload", "--host", "127.0.0.1", "--port", str(port), *config],
                cwd=cwd, env=env, stdout=log, stderr=subprocess.STDOUT,
            )
        url = f"http://127.0.0.1:{port}"
        deadline = time.time() + 60
        while time.time() < deadline:
            if proc.poll() is not None:
                output = log_path.read_text()
                if "address already in use" in output.lower() and attempt + 1 < attempts:
                    break
                raise AssertionError("langgraph dev exited:\n" + output[-3000:])
            try:
                if httpx.get(f"{url}/ok", timeout=1).status_code == 200:
                    return proc, url
            except httpx.HTTPError:
                time.sleep(0.3)
        else:
            proc.kill()
            raise AssertionError("langgraph dev did not start:\n" + log_path.read_text()[-3000:])
    raise AssertionError("langgraph dev found no free port")
