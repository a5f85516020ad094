"""``smart-agent serve`` on a port another process listens on: one line, exit 2 (a real socket on
127.0.0.1, which tests/unit runs without; serve's other checks: tests/unit/cli/test_serve.py)."""

from __future__ import annotations

import socket

import pytest

from smart_agent.cli import main


def test_a_port_in_use_is_one_line_not_another_port(capsys: pytest.CaptureFixture[str]) -> None:
    """The engine would quietly listen on another port: a replica behind a load balancer must not."""
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        assert main(["serve", "--port", str(port)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1, err
    assert err.strip() == f"smart-agent: cannot listen on 127.0.0.1:{port}: Address already in use"
