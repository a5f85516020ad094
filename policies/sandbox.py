"""The sandbox of the tools: the only folder file tools may touch, whether URL tools may reach
private addresses, the largest write. A served graph's client may narrow these, never widen
them (``client`` of each setting; ``config/served.py`` applies it)."""

from __future__ import annotations

from dataclasses import dataclass

from ..config.fields import Settings, setting
from ..config.files import existing_folder


@dataclass(kw_only=True)
class SandboxSettings(Settings):
    """Sandbox"""

    workspace: str = setting(
        # Empty means "the current folder", resolved when a tool runs (not here: contexts are
        # built on the server's event loop, where os.getcwd blocks).
        "",
        help="Folder the file tools are confined to. Empty: $SMART_AGENT_WORKSPACE or the current folder.",
        parse=existing_folder,
        metavar="DIR",
        client="inside",
    )
    allow_private_network: bool = setting(
        False,
        help="Let URL tools reach private, loopback and link-local addresses. Off by default (protects against "
        "SSRF).",
        client="off",
    )
    max_write_bytes: int = setting(
        10_000_000,
        help="Largest content (UTF-8 bytes) write_file may write; larger writes are refused before anything is "
        "written.",
        bounds=(1, 1_000_000_000),
        client="lower",
    )
