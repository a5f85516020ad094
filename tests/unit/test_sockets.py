"""tests/unit's network guard (tests/unit/conftest.py): Internet sockets and name lookups fail
with a clear error during a unit test, and a test that swallowed one fails afterwards; Unix
sockets, socket pairs and asyncio's event loop keep working."""

from __future__ import annotations

import asyncio
import contextlib
import socket
from pathlib import Path

import httpx
import pytest

from unit.conftest import NetworkDisabledError, NetworkGuard, is_local_name

REFUSED = "tests/unit runs without the network"


def test_a_connection_to_127_0_0_1_is_refused(offline: list[str]) -> None:
    with pytest.raises(NetworkDisabledError, match=rf"{REFUSED}: connect to \('127\.0\.0\.1', 9\) refused"):
        socket.create_connection(("127.0.0.1", 9), timeout=1)
    with socket.socket(socket.AF_INET6) as s, pytest.raises(NetworkDisabledError, match=REFUSED):
        s.connect_ex(("::1", 9))
    assert offline == ["connect to ('127.0.0.1', 9)", "connect to ('::1', 9)"]


def test_a_name_is_not_looked_up(offline: list[str]) -> None:
    with pytest.raises(NetworkDisabledError, match=rf"{REFUSED}: name lookup of 'example\.com' refused"):
        socket.getaddrinfo("example.com", 443)
    with pytest.raises(NetworkDisabledError, match=REFUSED):
        socket.gethostbyname("example.com")
    with pytest.raises(httpx.ConnectError, match=REFUSED):  # what a client library makes of it
        httpx.get("http://example.com/", timeout=1)
    assert offline[:2] == ["name lookup of 'example.com'"] * 2 and len(offline) == 3


async def test_asyncio_connections_are_refused(offline: list[str]) -> None:
    with pytest.raises(NetworkDisabledError, match=REFUSED):
        await asyncio.open_connection("127.0.0.1", 9)
    with pytest.raises(NetworkDisabledError, match=REFUSED):
        await asyncio.open_connection("example.com", 443)
    assert offline == ["connect to ('127.0.0.1', 9)", "name lookup of 'example.com'"]


def test_no_server_listens_and_no_datagram_leaves(offline: list[str]) -> None:
    with socket.socket() as s, pytest.raises(NetworkDisabledError, match=REFUSED):
        s.bind(("127.0.0.1", 0))
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as u, pytest.raises(NetworkDisabledError, match=REFUSED):
        u.sendto(b"x", ("127.0.0.1", 9))
    assert offline == ["bind to ('127.0.0.1', 0)", "sendto ('127.0.0.1', 9)"]


async def test_unix_sockets_socket_pairs_and_local_addresses_work(tmp_path: Path, network: NetworkGuard) -> None:
    a, b = socket.socketpair()
    with a, b:
        a.sendall(b"ping")
        assert b.recv(4) == b"ping"

    async def echo(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writer.write(await reader.readline())
        await writer.drain()
        writer.close()

    server = await asyncio.start_unix_server(echo, path=str(tmp_path / "s"))
    async with server:
        reader, writer = await asyncio.open_unix_connection(str(tmp_path / "s"))
        writer.write(b"hello\n")
        assert await reader.readline() == b"hello\n"
        writer.close()
        await writer.wait_closed()
    assert socket.getaddrinfo("127.0.0.1", 80)[0][4][0] == "127.0.0.1"  # an address needs no name server
    assert socket.getaddrinfo("localhost", 80, socket.AF_INET)[0][4][0] == "127.0.0.1"
    assert network.attempts == []


def test_local_names_are_localhost_and_addresses() -> None:
    for host in (None, "localhost", b"localhost", "127.0.0.1", "::1", "[::1]", "fe80::1%eth0", "127.1", "2130706433"):
        assert is_local_name(host), host
    for host in ("example.com", "localhost.example.com", "", "my-host"):
        assert not is_local_name(host), host


def test_a_test_that_swallowed_a_refusal_fails_afterwards(monkeypatch: pytest.MonkeyPatch) -> None:
    guard = NetworkGuard()
    guard.install(monkeypatch)  # on top of this test's own guard
    with contextlib.suppress(OSError):  # what code that handles network errors does
        socket.create_connection(("127.0.0.1", 9))
    assert guard.verdict() == (
        "a unit test used the network: connect to ('127.0.0.1', 9) (a test that needs it: tests/graph;"
        " one that checks the code offline: the offline fixture)"
    )
    guard.expected = True  # the test asked for ``offline``
    assert guard.verdict() is None
    assert NetworkGuard().verdict() is None
