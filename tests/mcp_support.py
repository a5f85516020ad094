"""Real MCP servers for the tests: ``mcp_server_app.py`` (FastMCP) over stdio, or as a
separate process serving streamable HTTP on 127.0.0.1; configurations that reach them."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import free_port

APP = Path(__file__).resolve().parent / "mcp_server_app.py"


def stdio_server(tmp_path: Path, name: str = "math", **extra) -> dict:
    """A stdio server entry; it writes its pid to ``tmp_path/<name>.pid`` and notes to ``notes.txt``."""
    env = {"MCP_PID_FILE": str(tmp_path / f"{name}.pid"), "MCP_NOTES": str(tmp_path / "notes.txt")}
    return {"command": sys.executable, "args": [str(APP)], "env": env, **extra}


def write_config(tmp_path: Path, servers: dict) -> Path:
    path = tmp_path / "mcp.json"
    path.write_text(json.dumps({"mcpServers": servers}), encoding="utf-8")
    return path


def pids_of(tmp_path: Path, name: str = "math") -> list[int]:
    """The pids of every start of the stdio server ``name``, in order."""
    return [int(line) for line in (tmp_path / f"{name}.pid").read_text().split()]


def pid_of(tmp_path: Path, name: str = "math") -> int:
    """The pid of the one start of the stdio server ``name``."""
    (pid,) = pids_of(tmp_path, name)
    return pid


def alive(pid: int) -> bool:
    """Whether process ``pid`` still runs (a zombie no longer does)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except FileNotFoundError:
        return False
    return "\nState:\tZ" not in status


class HttpMcpServer:
    """``mcp_server_app.py --http PORT`` in a process of its own (killable mid-run)."""

    def __init__(self, tmp_path: Path) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}/mcp"
        env = {**os.environ, "MCP_NOTES": str(tmp_path / "http-notes.txt")}
        self.proc = subprocess.Popen(
            [sys.executable, str(APP), "--http", str(self.port)], env=env, stderr=subprocess.DEVNULL
        )
        for _ in range(600):  # until it accepts connections (or has died)
            if self.proc.poll() is not None:
                raise RuntimeError("the HTTP MCP server exited at start")
            try:
                socket.create_connection(("127.0.0.1", self.port), 0.2).close()
                return
            except OSError:
                time.sleep(0.05)
        raise RuntimeError("the HTTP MCP server did not start")

    def kill(self) -> None:
        self.proc.kill()
        self.proc.wait()


@pytest.fixture
def http_mcp(tmp_path):
    """An MCP server over streamable HTTP on 127.0.0.1 for the test, killed at its end."""
    server = HttpMcpServer(tmp_path)
    yield server
    server.kill()
