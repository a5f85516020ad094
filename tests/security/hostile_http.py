"""Raw-socket servers that misbehave on purpose (stdlib only), for the hang tests.

* ``SilentServer``: accepts connections, reads the request, never answers.
* ``SlowHeaderServer``: answers ``200 OK`` and then one header line every
  ``interval_s`` seconds, forever (a slow-drip that per-read timeouts never catch).

Both count what happened (``connections``, ``header_lines_sent``) so tests can
assert on the server's side of the story.
"""

from __future__ import annotations

import contextlib
import socket
import threading
import time


class _RawServer:
    def __init__(self) -> None:
        self._sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._sock.bind(("127.0.0.1", 0))
        self._sock.listen(16)
        self._sock.settimeout(0.2)
        self.port = self._sock.getsockname()[1]
        self.connections = 0
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._clients: list[socket.socket] = []
        self._thread = threading.Thread(target=self._accept_loop, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join(5)
        with self._lock:
            for conn in self._clients:
                with contextlib.suppress(OSError):
                    conn.close()
        self._sock.close()

    def _accept_loop(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self._sock.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            with self._lock:
                self.connections += 1
                self._clients.append(conn)
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:  # pragma: no cover - overridden
        raise NotImplementedError


class SilentServer(_RawServer):
    """Accepts, reads whatever arrives, never writes a byte."""

    def _serve(self, conn: socket.socket) -> None:
        conn.settimeout(0.2)
        while not self._stop.is_set():
            try:
                if not conn.recv(65536):
                    return
            except TimeoutError:
                continue
            except OSError:
                return


class SlowHeaderServer(_RawServer):
    """``HTTP/1.1 200 OK`` then one ``X-Drip-N: ...`` header line every ``interval_s``."""

    def __init__(self, interval_s: float = 3.0) -> None:
        super().__init__()
        self.interval_s = interval_s
        self.header_lines_sent = 0

    def _serve(self, conn: socket.socket) -> None:
        try:
            conn.recv(65536)  # the request
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n")
            n = 0
            while not self._stop.wait(self.interval_s):
                n += 1
                conn.sendall(f"X-Drip-{n}: {'x' * 20}\r\n".encode())
                with self._lock:
                    self.header_lines_sent += 1
        except OSError:  # the client gave up and closed the connection
            return


def wait_until(predicate, timeout_s: float = 5.0) -> bool:
    end = time.monotonic() + timeout_s
    while time.monotonic() < end:
        if predicate():
            return True
        time.sleep(0.05)
    return predicate()
