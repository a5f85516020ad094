"""Workspace confinement, the SSRF URL guard and run-context lookup."""

from __future__ import annotations

import os
import socket
from pathlib import Path
from types import SimpleNamespace

import pytest
from tool_support import make_runtime

from smart_agent.config.context import Context
from smart_agent.tools.guards import (
    ToolError,
    allow_private_network_of,
    check_url_allowed,
    context_value,
    resolve_in_workspace,
    workspace_of,
)

PUBLIC_IP = "93.184.216.34"


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    workspace = tmp_path / "ws"
    (workspace / "sub").mkdir(parents=True)
    (workspace / "sub" / "inside.txt").write_text("inside")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("secret")
    return workspace


def outside_dir(ws: Path) -> Path:
    return ws.parent / "outside"


# -- resolve_in_workspace ---------------------------------------------------------
@pytest.mark.parametrize("path", ["../x", "a/../../x", "sub/../../outside/secret.txt", "..", "sub/../.."])
def test_dotdot_escapes_are_refused(ws: Path, path: str) -> None:
    with pytest.raises(ToolError, match="outside the workspace"):
        resolve_in_workspace(ws, path)


@pytest.mark.parametrize("path", ["a/../b.txt", "sub/./inside.txt", "./sub/../sub/inside.txt", ".", ""])
def test_dotdot_that_stays_inside_is_fine(ws: Path, path: str) -> None:
    assert resolve_in_workspace(ws, path).is_relative_to(ws.resolve())


def test_absolute_path_outside_is_refused(ws: Path) -> None:
    for path in ["/etc/passwd", str(outside_dir(ws) / "secret.txt"), str(ws.parent)]:
        with pytest.raises(ToolError, match="outside the workspace"):
            resolve_in_workspace(ws, path)


def test_absolute_path_inside_is_allowed(ws: Path) -> None:
    target = ws / "sub" / "inside.txt"
    assert resolve_in_workspace(ws, str(target)) == target.resolve()
    assert resolve_in_workspace(str(ws), str(ws / "new" / "file.txt")) == (ws / "new" / "file.txt").resolve()


def test_relative_path_resolves_under_workspace(ws: Path) -> None:
    assert resolve_in_workspace(ws, "sub/inside.txt") == (ws / "sub" / "inside.txt").resolve()


@pytest.mark.parametrize("path", ["~", "~/notes.txt", "~root/.ssh/id_rsa"])
def test_home_directory_paths_are_refused(ws: Path, path: str) -> None:
    with pytest.raises(ToolError, match="outside the workspace"):
        resolve_in_workspace(ws, path)


def test_nul_byte_is_refused(ws: Path) -> None:
    with pytest.raises(ToolError, match="NUL"):
        resolve_in_workspace(ws, "sub/inside.txt\x00.png")


def test_symlinked_file_pointing_outside_is_refused(ws: Path) -> None:
    (ws / "link.txt").symlink_to(outside_dir(ws) / "secret.txt")
    with pytest.raises(ToolError, match="outside the workspace"):
        resolve_in_workspace(ws, "link.txt")


def test_symlinked_dir_pointing_outside_is_refused(ws: Path) -> None:
    (ws / "linkdir").symlink_to(outside_dir(ws), target_is_directory=True)
    for path in ["linkdir", "linkdir/secret.txt", "linkdir/not-yet-there.txt", "linkdir/new/deeper.txt"]:
        with pytest.raises(ToolError, match="outside the workspace"):
            resolve_in_workspace(ws, path)


def test_dangling_symlink_pointing_outside_is_refused(ws: Path) -> None:
    (ws / "dangling").symlink_to(outside_dir(ws) / "does-not-exist.txt")
    with pytest.raises(ToolError, match="outside the workspace"):
        resolve_in_workspace(ws, "dangling")


def test_symlink_inside_the_workspace_is_fine(ws: Path) -> None:
    (ws / "alias").symlink_to(ws / "sub", target_is_directory=True)
    assert resolve_in_workspace(ws, "alias/inside.txt") == (ws / "sub" / "inside.txt").resolve()


def test_workspace_given_through_a_symlink(ws: Path) -> None:
    link = ws.parent / "ws-link"
    link.symlink_to(ws, target_is_directory=True)
    assert resolve_in_workspace(link, "sub/inside.txt") == (ws / "sub" / "inside.txt").resolve()
    assert resolve_in_workspace(link, str(link / "sub" / "inside.txt")) == (ws / "sub" / "inside.txt").resolve()
    with pytest.raises(ToolError):
        resolve_in_workspace(link, "../outside/secret.txt")


def test_symlink_loop_is_a_tool_error(ws: Path) -> None:
    (ws / "loop1").symlink_to(ws / "loop2")
    (ws / "loop2").symlink_to(ws / "loop1")
    with pytest.raises(ToolError):
        resolve_in_workspace(ws, "loop1/x")


# -- check_url_allowed ------------------------------------------------------------
BLOCKED_URLS = [
    "http://127.0.0.1/",
    "http://127.0.0.1:8080/admin",
    "http://localhost:8000/",
    "http://10.0.0.5/",
    "http://172.16.3.4/",
    "http://192.168.1.1/",
    "http://169.254.169.254/latest/meta-data/",
    "http://0.0.0.0/",
    "http://100.64.0.1/",  # shared address space (CGNAT)
    "http://224.0.0.1/",
    "http://[::1]/",
    "http://[::]/",
    "http://[::ffff:127.0.0.1]/",
    "http://[::ffff:7f00:1]/",
    "http://[::ffff:169.254.169.254]/",
    "http://[fe80::1]/",
    "http://[fec0::1]/",  # site-local
    "http://[fd00::1]/",  # unique local
    "http://[2002:7f00:1::1]/",  # 6to4 wrapping 127.0.0.1
    "http://2130706433/",  # decimal 127.0.0.1
    "http://0x7f.1/",  # hex + short form
    "http://0x7f000001/",
    "http://017700000001/",  # octal
    "http://127.1/",
    "https://127.0.0.1/",
]


@pytest.mark.parametrize("url", BLOCKED_URLS)
def test_private_destinations_are_refused(url: str) -> None:
    # The system resolver: IP literals, numeric forms and localhost need no network.
    with pytest.raises(ToolError, match="private/loopback.*allow_private_network"):
        check_url_allowed(url, allow_private_network=False)


@pytest.mark.parametrize("url", BLOCKED_URLS)
def test_allow_private_network_lets_them_through(url: str) -> None:
    def must_not_resolve(host: str) -> list[str]:
        raise AssertionError("no resolution is needed when private addresses are allowed")

    check_url_allowed(url, allow_private_network=True, resolve=must_not_resolve)


def test_hostname_resolving_to_private_is_refused() -> None:
    with pytest.raises(ToolError, match="internal.example.com resolves to a private"):
        check_url_allowed("https://internal.example.com/x", allow_private_network=False, resolve=lambda h: ["10.1.2.3"])


def test_any_private_address_among_several_is_refused() -> None:
    with pytest.raises(ToolError, match="private"):
        check_url_allowed(
            "http://rebind.example/", allow_private_network=False, resolve=lambda h: [PUBLIC_IP, "127.0.0.1"]
        )
    with pytest.raises(ToolError, match="private"):
        check_url_allowed(
            "http://v6.example/",
            allow_private_network=False,
            resolve=lambda h: ["2606:2800:220:1::1", "::ffff:10.0.0.1"],
        )


def test_public_addresses_are_allowed() -> None:
    seen: list[str] = []

    def resolve(host: str) -> list[str]:
        seen.append(host)
        return [PUBLIC_IP, "2606:2800:220:1:248:1893:25c8:1946"]

    check_url_allowed("https://Example.COM/page?q=1", allow_private_network=False, resolve=resolve)
    assert seen == ["example.com"]
    check_url_allowed(f"http://{PUBLIC_IP}:8080/", allow_private_network=False, resolve=resolve)
    assert seen == ["example.com"]  # IP literals are not resolved


def test_internationalized_host_is_resolved_in_punycode() -> None:
    seen: list[str] = []

    def resolve(host: str) -> list[str]:
        seen.append(host)
        return [PUBLIC_IP]

    check_url_allowed("https://bücher.example/", allow_private_network=False, resolve=resolve)
    assert seen == ["xn--bcher-kva.example"]


@pytest.mark.parametrize(
    "url",
    [
        "file:///etc/passwd",
        "ftp://example.com/x",
        "gopher://example.com/",
        "javascript:alert(1)",
        "data:text/plain,hi",
        "example.com/page",
    ],
)
@pytest.mark.parametrize("allow", [False, True])
def test_non_http_schemes_are_refused(url: str, allow: bool) -> None:
    with pytest.raises(ToolError, match="only http and https"):
        check_url_allowed(url, allow_private_network=allow, resolve=lambda h: [PUBLIC_IP])


@pytest.mark.parametrize(
    "url", ["http://user:pw@example.com/", "http://example.com@127.0.0.1/", "http://evil.example\\@127.0.0.1/"]
)
def test_userinfo_tricks_are_refused(url: str) -> None:
    with pytest.raises(ToolError, match="credentials|private"):
        check_url_allowed(url, allow_private_network=False, resolve=lambda h: [PUBLIC_IP])


def test_userinfo_is_refused_even_when_private_allowed() -> None:
    with pytest.raises(ToolError, match="credentials"):
        check_url_allowed("http://user:pw@example.com/", allow_private_network=True)


def test_unresolvable_host_is_a_tool_error() -> None:
    def fail(host: str) -> list[str]:
        raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")

    with pytest.raises(ToolError, match="Could not resolve host 'nowhere.invalid'"):
        check_url_allowed("http://nowhere.invalid/", allow_private_network=False, resolve=fail)
    with pytest.raises(ToolError, match="no addresses"):
        check_url_allowed("http://empty.example/", allow_private_network=False, resolve=lambda h: [])


def test_url_without_host_is_refused() -> None:
    with pytest.raises(ToolError, match="no host"):
        check_url_allowed("http:///path", allow_private_network=False)


# -- context_value ------------------------------------------------------------------
def test_context_value_shapes(tmp_path: Path) -> None:
    as_dataclass = SimpleNamespace(context=Context(workspace=str(tmp_path), allow_private_network=True))
    as_dict = SimpleNamespace(context={"workspace": str(tmp_path), "allow_private_network": True})
    for runtime in (as_dataclass, as_dict):
        assert context_value(runtime, "workspace", "dflt") == str(tmp_path)
        assert workspace_of(runtime) == tmp_path
        assert allow_private_network_of(runtime) is True
        assert context_value(runtime, "missing", 7) == 7
    for without in (
        None,
        SimpleNamespace(context=None),
        SimpleNamespace(),
        SimpleNamespace(context={"workspace": None}),
    ):
        assert context_value(without, "workspace", "dflt") == "dflt"
        assert allow_private_network_of(without) is False


def test_default_workspace_is_env_or_cwd(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SMART_AGENT_WORKSPACE", raising=False)
    monkeypatch.chdir(tmp_path)
    assert workspace_of(None) == Path(os.getcwd())
    monkeypatch.setenv("SMART_AGENT_WORKSPACE", str(tmp_path / "w"))
    assert workspace_of(SimpleNamespace(context=None)) == tmp_path / "w"


def test_context_value_with_a_real_tool_runtime(tmp_path: Path) -> None:
    runtime = make_runtime(tmp_path)
    assert workspace_of(runtime) == tmp_path
    assert allow_private_network_of(runtime) is False
