"""Safety guards shared by the built-in tools.

* :class:`ToolError` - a failure whose message is meant for the model (the tools
  node shows it verbatim in the error ``ToolMessage``).
* :func:`resolve_in_workspace` - confine a model-supplied path to the workspace
  (``..`` escapes, outside absolute paths, ``~`` and symlink escapes are refused).
* :func:`check_url_allowed` - SSRF guard: http(s) only, no credentials in the URL,
  and no private / loopback / link-local / ... destination unless allowed.
* :func:`context_value` - read a run-configuration field from an injected
  ``ToolRuntime`` whatever shape its context has (dataclass, dict or missing).
"""

from __future__ import annotations

import ipaddress
import os
import socket
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx

from ..config import settings
from ..config.context import context_field, context_flag

__all__ = [
    "Resolver",
    "ToolError",
    "allow_private_network_of",
    "check_url_allowed",
    "context_value",
    "context_workspace",
    "resolve_in_workspace",
    "workspace_of",
]

#: ``resolve(host) -> [address, ...]``; injectable for tests.
Resolver = Callable[[str], list[str]]

ALLOWED_URL_SCHEMES = frozenset({"http", "https"})


class ToolError(Exception):
    """A tool failure with a clear, model-readable message."""


# -- run configuration ------------------------------------------------------
def context_value(runtime: Any, name: str, default: Any = None) -> Any:
    """``runtime.context.<name>``, tolerating a missing runtime or context.

    ``runtime.context`` may be a dataclass (``Context``), any object with
    attributes, a plain dict (SDK / Studio callers) or None. A missing field or a
    None value yields ``default``.
    """
    return context_field(getattr(runtime, "context", None), name, default)


def workspace_of(runtime: Any) -> Path:
    """The run's workspace folder (:func:`context_workspace` of its context)."""
    return context_workspace(getattr(runtime, "context", None))


def context_workspace(ctx: Any) -> Path:
    """The workspace folder of a run context of any shape: its ``workspace``, a relative one taken
    from the server's (``$SMART_AGENT_WORKSPACE`` or the current folder), as a served graph's
    client's is checked (``config/served.py``); empty: the server's. (Reads the current folder when
    neither the context nor the environment names one: not on an event loop.)"""
    base = Path(settings.field_env("workspace")[1] or os.getcwd())
    return base / (context_field(ctx, "workspace", None) or "")


def allow_private_network_of(runtime: Any) -> bool:
    """Whether URL tools may reach private addresses in this run (default: no).

    Read strictly (``context_flag``): a raw dict context holding "false" is False,
    and a value that is not a boolean refuses the URL instead of allowing it."""
    try:
        return context_flag(getattr(runtime, "context", None), "allow_private_network", False)
    except ValueError as exc:
        raise ToolError(f"Refused: {exc}.") from None


# -- workspace confinement ----------------------------------------------------
def _outside(path: str, reason: str = "") -> ToolError:
    detail = f" ({reason})" if reason else ""
    return ToolError(
        f"Refused: path {path!r} is outside the workspace{detail}. Use a path relative to the workspace folder."
    )


def resolve_in_workspace(workspace: str | Path, path: str) -> Path:
    """Resolve ``path`` (relative to ``workspace``, or absolute) and make sure it stays inside.

    Symlinks are followed before the containment check, so a link inside the
    workspace that points outside is refused - for files, directories, and files
    that do not exist yet under a linked directory. Returns the resolved path.
    """
    if not isinstance(path, str):
        raise ToolError(f"path must be a string, got {type(path).__name__}")
    if "\x00" in path:
        raise ToolError("Refused: the path contains a NUL byte.")
    if path.startswith("~"):
        # Never expanded: "~/x" or "~user/x" would mean a home directory.
        raise _outside(path, "home-directory paths are not allowed")
    try:
        root = Path(workspace).expanduser().resolve(strict=False)
        candidate = Path(path)
        if not candidate.is_absolute():
            candidate = root / candidate
        resolved = candidate.resolve(strict=False)
    except (OSError, RuntimeError, ValueError) as exc:  # symlink loops, invalid names
        raise ToolError(f"Cannot resolve path {path!r}: {exc}") from None
    if not resolved.is_relative_to(root):
        raise _outside(path)
    return resolved


# -- URL / SSRF guard -----------------------------------------------------------
def system_resolve(host: str) -> list[str]:
    """All addresses ``host`` resolves to (numeric forms like ``0x7f.1`` are normalized)."""
    infos = socket.getaddrinfo(host, None, proto=socket.IPPROTO_TCP)
    return list(dict.fromkeys(str(info[4][0]) for info in infos))


def _is_blocked_address(ip: ipaddress.IPv4Address | ipaddress.IPv6Address) -> bool:
    if isinstance(ip, ipaddress.IPv6Address):
        # Addresses that embed an IPv4 address are judged by that address too.
        embedded = [ip.ipv4_mapped, ip.sixtofour, *(ip.teredo or ())]
        if any(e is not None and _is_blocked_address(e) for e in embedded):
            return True
        if ip.is_site_local:
            return True
    return (
        ip.is_private
        or ip.is_loopback
        or ip.is_link_local
        or ip.is_multicast
        or ip.is_reserved
        or ip.is_unspecified
        or not ip.is_global  # e.g. shared address space 100.64.0.0/10
    )


def _parse_ip(address: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    try:
        return ipaddress.ip_address(address.split("%", 1)[0])  # drop an IPv6 zone id
    except ValueError:
        return None


def check_url_allowed(url: str, *, allow_private_network: bool, resolve: Resolver | None = None) -> list[str] | None:
    """Raise :class:`ToolError` unless ``url`` may be fetched.

    Returns the host's addresses that were checked (None when nothing was resolved:
    ``allow_private_network``), so the caller can connect to exactly those and not
    resolve the name a second time (DNS rebinding).

    Only http(s) URLs without credentials are allowed. Unless
    ``allow_private_network`` is set, the host is resolved (``resolve(host)``, by
    default ``socket.getaddrinfo``) and the URL is refused when ANY address is
    private, loopback, link-local, multicast, reserved, unspecified or site-local
    (IPv4-mapped / 6to4 / Teredo IPv6 addresses are judged by their IPv4 part).
    The URL is parsed with httpx, the client that will fetch it, so the checked
    host is exactly the host that will be contacted.
    """
    try:
        parsed = httpx.URL(url)
    except (httpx.InvalidURL, TypeError, ValueError) as exc:
        raise ToolError(f"Invalid URL {url!r}: {exc}") from None
    if parsed.scheme not in ALLOWED_URL_SCHEMES:
        shown = parsed.scheme or "(none)"
        raise ToolError(f"Refused: only http and https URLs are allowed (scheme {shown} in {url!r}).")
    if parsed.userinfo:
        raise ToolError(f"Refused: URLs with credentials or user info ('user@host') are not allowed: {url!r}.")
    host = parsed.raw_host.decode("ascii")
    if not host:
        raise ToolError(f"Invalid URL {url!r}: it has no host.")
    if allow_private_network:
        return None

    literal = _parse_ip(host)
    if literal is not None:
        addresses = [str(literal)]
    else:
        try:
            addresses = (resolve or system_resolve)(host)
        except (OSError, UnicodeError) as exc:
            raise ToolError(f"Could not resolve host {host!r}: {exc}") from None
        if not addresses:
            raise ToolError(f"Could not resolve host {host!r}: no addresses.")
    for address in addresses:
        ip = _parse_ip(address)
        if ip is None or _is_blocked_address(ip):
            shown = "" if address == host else f" ({address})"
            raise ToolError(
                f"Refused: {host} resolves to a private/loopback address{shown}; set allow_private_network to allow it."
            )
    return addresses
