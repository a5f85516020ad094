"""tests/unit runs without the network: no test here opens an Internet socket.

The autouse ``network`` fixture makes every attempt fail, during the test, with
:class:`NetworkDisabledError` (an ``OSError``, so the code under test sees what it sees offline):
connecting, binding or sending on an ``AF_INET``/``AF_INET6`` socket (``socket.create_connection``,
asyncio, httpx... all come down to these), and resolving a name other than ``localhost`` or an
address. Unix sockets and ``socket.socketpair`` (asyncio's event loop wakes itself up with one) keep
working. A test that catches the error still fails afterwards, naming what it tried; a test of
what the code does offline asks for the ``offline`` fixture (the attempts, which it may check).
A test that needs a socket (a local HTTP server, the scripted server) belongs in tests/graph."""

from __future__ import annotations

import errno
import ipaddress
import socket
from collections.abc import Iterator
from typing import Any, NoReturn

import pytest

INET = (socket.AF_INET, socket.AF_INET6)
LOCAL_NAMES = {"localhost", "localhost."}


class NetworkDisabledError(OSError):
    """What an attempt to use the network raises in tests/unit."""


def is_local_name(host: Any) -> bool:
    """``host`` needs no name server: None, ``localhost`` or an address (IPv6 maybe in brackets or with a zone)."""
    if host is None:
        return True
    name = host.decode() if isinstance(host, bytes) else str(host)
    if name in LOCAL_NAMES:
        return True
    try:
        ipaddress.ip_address(name.strip("[]").split("%")[0])
    except ValueError:
        try:
            socket.inet_aton(name)  # the C library's other IPv4 forms: 127.1, 0x7f.1, 2130706433
        except OSError:
            return False
    return True


class NetworkGuard:
    """Refuses Internet sockets and name lookups while installed; ``attempts`` lists what was tried."""

    def __init__(self) -> None:
        self.attempts: list[str] = []
        self.expected = False  # the test asked for ``offline``: attempts are what it checks

    def verdict(self) -> str | None:
        """Why the test fails after the fact (it used the network and did not ask for ``offline``), or None."""
        if not self.attempts or self.expected:
            return None
        return (f"a unit test used the network: {'; '.join(self.attempts)} (a test that needs it: tests/graph;"
                " one that checks the code offline: the offline fixture)")

    def refuse(self, what: str) -> NoReturn:
        self.attempts.append(what)
        raise NetworkDisabledError(
            errno.EACCES, f"tests/unit runs without the network: {what} refused (a test that needs it: tests/graph)"
        )

    def install(self, monkeypatch: pytest.MonkeyPatch) -> None:
        guard = self
        sock = socket.socket
        real_connect, real_connect_ex, real_bind, real_sendto = sock.connect, sock.connect_ex, sock.bind, sock.sendto

        def connect(self: socket.socket, address: Any) -> None:
            if self.family in INET:
                guard.refuse(f"connect to {address!r}")
            real_connect(self, address)

        def connect_ex(self: socket.socket, address: Any) -> int:
            if self.family in INET:
                guard.refuse(f"connect to {address!r}")
            return real_connect_ex(self, address)

        def bind(self: socket.socket, address: Any) -> None:
            if self.family in INET:
                guard.refuse(f"bind to {address!r}")
            real_bind(self, address)

        def sendto(self: socket.socket, data: Any, *args: Any) -> int:
            if self.family in INET:
                guard.refuse(f"sendto {args[-1]!r}")
            return real_sendto(self, data, *args)

        real_getaddrinfo = socket.getaddrinfo
        real_gethostbyname = socket.gethostbyname
        real_gethostbyname_ex = socket.gethostbyname_ex

        def getaddrinfo(host: Any, *args: Any, **kwargs: Any) -> Any:
            if not is_local_name(host):
                guard.refuse(f"name lookup of {host!r}")
            return real_getaddrinfo(host, *args, **kwargs)

        def gethostbyname(host: str) -> str:
            if not is_local_name(host):
                guard.refuse(f"name lookup of {host!r}")
            return real_gethostbyname(host)

        def gethostbyname_ex(host: str) -> tuple[str, list[str], list[str]]:
            if not is_local_name(host):
                guard.refuse(f"name lookup of {host!r}")
            return real_gethostbyname_ex(host)

        for name, method in (("connect", connect), ("connect_ex", connect_ex), ("bind", bind), ("sendto", sendto)):
            monkeypatch.setattr(sock, name, method)
        monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
        monkeypatch.setattr(socket, "gethostbyname", gethostbyname)
        monkeypatch.setattr(socket, "gethostbyname_ex", gethostbyname_ex)


@pytest.fixture(autouse=True)
def network(monkeypatch: pytest.MonkeyPatch) -> Iterator[NetworkGuard]:
    guard = NetworkGuard()
    guard.install(monkeypatch)
    yield guard
    if (why := guard.verdict()) is not None:
        pytest.fail(why, pytrace=False)


@pytest.fixture
def offline(network: NetworkGuard) -> list[str]:
    """This test checks what the code does without the network: its refused attempts (listed here) are expected."""
    network.expected = True
    return network.attempts
