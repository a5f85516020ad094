"""Skills (the Agent Skills format) and project instructions (``AGENTS.md``), read at a run's start.

A skill is a folder holding ``SKILL.md``: YAML front matter with ``name`` and ``description``,
then a Markdown body, and any files beside it. The skills folders of a run are its ``skills``
setting (``--skills DIR``, an agents file's ``skills:``) and ``$SMART_AGENT_HOME/skills``
(``policies/skills.py``). At the start of each run :func:`project_start` lists every skill's name
and description for the system prompt (state ``skills``: the run's folders -> that list,
``models/prompts.py``); the bodies and files reach the conversation only through the
:func:`read_skill` tool, a context tool offered while the run has skills (``context_tools.py``).

The same hook reads ``AGENTS.md`` of ``$SMART_AGENT_HOME`` and of the workspace into the state
(``project_instructions``) unless the run's ``agents_md`` is off, each cut at
``agents_md_max_chars`` with a note. Both are text for the model: nothing in them changes a
setting, a tool or a permission (a skill's ``allowed-tools`` is ignored).

Skills folders are read-only, untrusted content, read like the file tools read the workspace
(``safe_fs``/``safe_walk``: component by component, no symbolic link followed, only regular
files) and bounded: files read (``MAX_SKILL_BYTES``, ``MAX_FILE_BYTES``), skills listed
(``MAX_SKILLS``), entries looked at (``MAX_ENTRIES``), the front matter's size and YAML
(``config/files.load_yaml``: depth, aliases). A skill folder that is a symbolic link, a
``SKILL.md`` that cannot be read or parsed, a second skill of one name: one warning line naming
it (a ``warning`` event, and the log), the skill skipped, the run goes on. A path given to
``read_skill`` never leaves its skill's folder. The folders themselves are the operator's: a
served graph's client may only choose among the server's (``client="subset"``).
"""

from __future__ import annotations

import asyncio
import logging
import os
import re
import stat
import threading
import time
from collections.abc import Awaitable, Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from langchain.tools import ToolRuntime
from langchain_core.tools import tool
from pydantic import BaseModel, Field

from ..config import settings
from ..config.context import context_field
from ..config.files import InputFileError, load_yaml, read_descriptor
from ..models.prompts import render_instructions, render_skills
from ..policies.skills import skill_folders
from ..runs.events import emit
from .guards import ToolError, context_workspace
from .safe_fs import open_regular
from .safe_walk import WalkLimits, open_entry, walk

__all__ = [
    "READ_SKILL", "Skill", "SkillError", "load_project", "parse_skill", "project_start", "read_skill", "scan_skills",
]

log = logging.getLogger(__name__)

READ_SKILL = "read_skill"
SKILL_FILE = "SKILL.md"
AGENTS_FILE = "AGENTS.md"
#: Largest SKILL.md (a larger one is skipped with a warning).
MAX_SKILL_BYTES = 256_000
#: Largest front matter (characters between the two ``---`` lines).
MAX_FRONT_MATTER = 16_000
#: Most skills a run lists (the others are skipped with one warning).
MAX_SKILLS = 200
#: Most entries of a skills folder looked at (a folder of a million entries is not walked whole).
MAX_ENTRIES = 2_000
#: Longest name and description (the Agent Skills limits); a longer description is cut.
MAX_NAME = 64
MAX_DESCRIPTION = 1_024
#: Largest file of a skill read_skill reads, and the characters one call returns.
MAX_FILE_BYTES = 2_000_000
PAGE_CHARS = 50_000
#: Files of a skill read_skill lists (and walks: entries, depth, seconds).
LIST_FILES = 100
WALK_ENTRIES, WALK_DEPTH, WALK_SECONDS = 2_000, 8, 5.0

NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9 ._:-]*$")


class SkillError(ValueError):
    """A SKILL.md that cannot be used (one line: what is wrong)."""


@dataclass(frozen=True)
class Skill:
    """One skill: its ``name`` and ``description``, and where it is: the skills folder ``root``
    (absolute) and its own folder's name there (``folder``)."""

    name: str
    description: str
    root: str
    folder: str

    @property
    def path(self) -> str:
        return os.path.join(self.root, self.folder, SKILL_FILE)


# ----------------------------------------------------------------------------- SKILL.md
def split_front_matter(text: str, where: str) -> tuple[str, str]:
    """``(front matter, body)`` of a SKILL.md's text (a ``SkillError`` when it has none)."""
    text = text.removeprefix("\ufeff")
    lines = text.split("\n", 1)
    if lines[0].strip() != "---" or len(lines) < 2:
        raise SkillError(f"{where}: no YAML front matter (the file must start with a '---' line)")
    rest = lines[1]
    match = re.search(r"^---[ \t]*\r?$", rest[: MAX_FRONT_MATTER + 8], re.MULTILINE)
    if match is None:
        if len(rest) > MAX_FRONT_MATTER:
            raise SkillError(f"{where}: the front matter is longer than {MAX_FRONT_MATTER} characters")
        raise SkillError(f"{where}: the front matter has no closing '---' line")
    return rest[: match.start()], rest[match.end():].lstrip("\r\n")


def parse_skill(text: str, where: str) -> tuple[str, str, str]:
    """``(name, description, body)`` of a SKILL.md's text; a ``SkillError`` naming ``where``."""
    front, body = split_front_matter(text, where)
    try:
        data = load_yaml(front, what=f"{where}: front matter", max_depth=20, max_nodes=10_000)
    except InputFileError as exc:
        raise SkillError(str(exc)) from None
    if not isinstance(data, Mapping):
        raise SkillError(f"{where}: the front matter is not a mapping with name and description")
    name, description = data.get("name"), data.get("description")
    if not isinstance(name, str) or not name.strip():
        raise SkillError(f"{where}: name: missing (a text)")
    name = name.strip()
    if len(name) > MAX_NAME or not NAME_RE.match(name):
        raise SkillError(
            f"{where}: name: {name[:80]!r} is not a skill name (at most {MAX_NAME} letters, digits, spaces, '.', "
            "'_', ':' or '-')"
        )
    if not isinstance(description, str) or not description.strip():
        raise SkillError(f"{where}: description: missing (a text saying when to use the skill)")
    description = " ".join(description.split())
    if len(description) > MAX_DESCRIPTION:
        description = description[: MAX_DESCRIPTION - 1].rstrip() + "…"
    return name, description, body


def _read(root: str, rel: str, limit: int, what: str) -> tuple[bytes, os.stat_result]:
    """The bytes of ``rel`` below ``root`` (no link followed, a regular file, at most ``limit``
    bytes) and the status of the file they were read from: a ``SkillError`` otherwise."""
    where = os.path.join(root, rel)
    try:
        fd, st = open_regular(root, rel, protected=False)
    except ToolError as exc:
        raise SkillError(f"{where}: {exc}") from None
    try:
        return read_descriptor(fd, name=where, what=what, limit=limit), st
    except InputFileError as exc:
        raise SkillError(str(exc)) from None
    finally:
        os.close(fd)


def _identity(st: os.stat_result) -> tuple[int, int, int, int]:
    return st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns


# Name and description of each SKILL.md a run start read, by path, with the identity of the file
# read (device, inode, size, modification time): a later run lists an unchanged file from here
# rather than reading and parsing it again (YAML is most of a run start's work).
_PARSED: dict[str, tuple[tuple[int, int, int, int], tuple[str, str]]] = {}
_PARSED_MAX = 4096
_CACHE_LOCK = threading.Lock()


def _listed(root: str, folder: str, where: str, st: os.stat_result) -> tuple[str, str]:
    """``(name, description)`` of the skill in ``root``/``folder`` whose SKILL.md (``where``) has the
    status ``st`` (``lstat``: its folder is not a link, checked by the caller); a ``SkillError``
    when it cannot be used."""
    hit = _PARSED.get(where)
    if hit is not None and stat.S_ISREG(st.st_mode) and hit[0] == _identity(st):
        return hit[1]
    data, opened = _read(root, f"{folder}/{SKILL_FILE}", MAX_SKILL_BYTES, "skill")
    name, description, _body = parse_skill(_text(data, where), where)
    with _CACHE_LOCK:  # (run starts read on two threads)
        _PARSED.pop(where, None)
        _PARSED[where] = (_identity(opened), (name, description))
        while len(_PARSED) > _PARSED_MAX:
            _PARSED.pop(next(iter(_PARSED)))
    return name, description


def _text(data: bytes, where: str) -> str:
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise SkillError(f"{where}: not UTF-8 text (byte {exc.start})") from None
    if "\x00" in text:
        raise SkillError(f"{where}: a binary file (NUL bytes), not text")
    return text


def scan_skills(folders: tuple[str, ...] | list[str]) -> tuple[list[Skill], list[str]]:
    """The skills of ``folders`` (in order; a missing folder has none) and a warning line for each
    one skipped. Reads the file system: not on an event loop."""
    skills: list[Skill] = []
    warnings: list[str] = []
    seen: dict[str, str] = {}
    for given in folders:
        root = os.path.abspath(os.path.expanduser(given))
        try:
            with os.scandir(root) as listing:
                entries = sorted(
                    (e for _i, e in zip(range(MAX_ENTRIES + 1), listing, strict=False)), key=lambda e: e.name
                )
        except FileNotFoundError:
            continue
        except OSError as exc:
            warnings.append(f"skills folder {root}: cannot list it ({exc.strerror or exc}); skipped")
            continue
        if len(entries) > MAX_ENTRIES:
            warnings.append(f"skills folder {root}: more than {MAX_ENTRIES} entries; only the first are read")
            entries = entries[:MAX_ENTRIES]
        for entry in entries:
            if entry.name.startswith("."):
                continue
            where = os.path.join(root, entry.name, SKILL_FILE)
            try:
                if entry.is_symlink():
                    warnings.append(f"skill {os.path.join(root, entry.name)}: a symbolic link; skipped")
                    continue
                if not entry.is_dir(follow_symlinks=False):
                    continue
                st = os.lstat(where)
                if len(skills) >= MAX_SKILLS:
                    warnings.append(f"{where}: more than {MAX_SKILLS} skills; skipped")
                    continue
                name, description = _listed(root, entry.name, where, st)
            except FileNotFoundError:
                continue  # a folder that holds no skill
            except SkillError as exc:
                warnings.append(f"{exc}; skipped")
                continue
            except OSError as exc:
                warnings.append(f"{where}: cannot read it ({exc.strerror or exc}); skipped")
                continue
            if name in seen:
                warnings.append(f"{where}: another skill is named {name!r} ({seen[name]}); skipped")
                continue
            seen[name] = where
            skills.append(Skill(name, description, root, entry.name))
    return skills, warnings


# ----------------------------------------------------------------------------- AGENTS.md
def _instructions(root: Path, where: str, limit: int, protected: bool) -> tuple[str | None, str | None]:
    """``(the prompt's block, a warning)`` of ``root``/AGENTS.md (both None: there is none)."""
    shown = root / AGENTS_FILE
    try:
        if not os.path.lexists(shown):
            return None, None
        fd, _ = open_regular(root, AGENTS_FILE, protected=protected)
    except (ToolError, OSError) as exc:
        return None, f"{shown}: {exc}; not read"
    try:
        data = read_descriptor(fd, name=str(shown), what=AGENTS_FILE, limit=4 * limit + 4, whole=False)
    except InputFileError as exc:
        return None, f"{exc}; not read"
    finally:
        os.close(fd)
    text = data.decode("utf-8", errors="replace")
    if "\x00" in text:
        return None, f"{shown}: a binary file (NUL bytes), not text; not read"
    if not text.strip():
        return None, None
    cut = len(text) > limit
    return render_instructions(where, text[:limit] if cut else text, limit if cut else None), None


def load_project(ctx: Any, folder_sets: list[tuple[str, ...]]) -> tuple[str, dict[str, str], list[str]]:
    """What a run's start reads: ``(the AGENTS.md blocks, {folders key: the skills list}, warnings)``.
    Reads the file system: not on an event loop."""
    warnings: list[str] = []
    blocks: list[str] = []
    if context_field(ctx, "agents_md", True):
        limit = int(context_field(ctx, "agents_md_max_chars", 12_000))
        home = Path(os.path.abspath(settings.data_home()))
        workspace = Path(os.path.realpath(context_workspace(ctx)))
        for root, where, protected in ((home, "home", False), (workspace, "workspace", True)):
            block, warning = _instructions(root, where, limit, protected)
            if warning:
                warnings.append(warning)
            if block:
                blocks.append(block)
    listed: dict[str, str] = {}
    for folders in folder_sets:
        key = "\n".join(folders)
        if key in listed:
            continue
        skills, skipped = scan_skills(folders)
        warnings.extend(w for w in skipped if w not in warnings)
        remember(key, skills)
        if skills:
            listed[key] = render_skills([(s.name, s.description) for s in skills])
    return "\n\n".join(blocks), listed, warnings


# The skills each set of folders had at the latest run start that read it: read_skill finds a skill
# the prompt listed here (never in the state, which a served graph's client may write).
_KNOWN: dict[str, dict[str, Skill]] = {}
_KNOWN_MAX = 64


def remember(key: str, skills: list[Skill]) -> None:
    with _CACHE_LOCK:
        _KNOWN.pop(key, None)
        _KNOWN[key] = {s.name: s for s in skills}
        while len(_KNOWN) > _KNOWN_MAX:
            _KNOWN.pop(next(iter(_KNOWN)))


def known_skills(folders: tuple[str, ...]) -> dict[str, Skill]:
    """The skills of ``folders`` by name: those the latest run start listed, else read now
    (not on an event loop)."""
    hit = _KNOWN.get("\n".join(folders))
    if hit is not None:
        return hit
    skills, _warnings = scan_skills(folders)
    remember("\n".join(folders), skills)
    return {s.name: s for s in skills}


RunStartHook = Callable[[Mapping[str, Any], dict, Any], Awaitable[dict[str, Any]]]
# The run start's reads run on a thread of their own: a run with async tools and an async model
# leaves the event loop's default executor alone (tests/unit/history/test_budget.py).
_READER = ThreadPoolExecutor(max_workers=2, thread_name_prefix="smart-agent-files")


def project_start(members: Mapping[str, Any] | None = None) -> RunStartHook:
    """The resolver hook that reads a run's AGENTS.md and lists its skills (off the event loop),
    for the run's folders and, in a team (``members``: name -> ``AgentSpec``), each member's own
    ``skills`` setting. Warnings go out as ``warning`` events (a nested run's are its caller's)."""
    member_skills = [list(spec.context["skills"]) for spec in (members or {}).values() if "skills" in spec.context]

    async def start(state: Mapping[str, Any], update: dict, ctx: Any) -> dict[str, Any]:
        sets = list(dict.fromkeys([skill_folders(ctx.skills), *(skill_folders(s) for s in member_skills)]))
        loop = asyncio.get_running_loop()
        instructions, listed, warnings = await loop.run_in_executor(_READER, load_project, ctx, sets)
        if warnings and _top_level():
            for line in warnings:
                log.info("smart-agent: %s", line)
                emit("warning", source="skills", message=line)
        return {"run_settings": {"project_instructions": instructions, "skills": listed}}

    return start


def _top_level() -> bool:
    from langgraph.config import get_config

    from .agents import agent_depth

    try:
        return agent_depth(get_config()) == 0
    except RuntimeError:
        return True


# ----------------------------------------------------------------------------- read_skill
class ReadSkillArgs(BaseModel):
    """Arguments of read_skill."""

    name: str = Field(description="The skill's name, as the system prompt lists it.")
    path: str = Field(
        default=SKILL_FILE,
        description="A file of the skill's folder, relative to it (default: its SKILL.md instructions).",
    )
    offset: int = Field(default=0, ge=0, description="Character offset to start at (to read the next page).")


def _relative(path: str) -> str:
    """``path`` as a '/'-separated path inside a skill's folder; a ``ToolError`` for one leaving it."""
    text = str(path).strip().replace("\\", "/") or SKILL_FILE
    if "\x00" in text:
        raise ToolError("Refused: the path contains a NUL byte.")
    pure = PurePosixPath(text)
    if pure.is_absolute() or text.startswith("~") or any(p == ".." for p in pure.parts):
        raise ToolError(f"Refused: {path!r} is not a path inside the skill's folder (give it relative to the folder).")
    parts = [p for p in pure.parts if p not in ("", ".")]
    if not parts:
        raise ToolError(f"{path!r} is the skill's folder; give a file of it.")
    return "/".join(parts)


def _read_in_skill(skill: Skill, rel: str, offset: int) -> str:
    """The page of ``rel`` of ``skill`` read_skill returns (in a worker thread)."""
    limits = WalkLimits(time.monotonic() + WALK_SECONDS, WALK_ENTRIES, WALK_DEPTH)
    names: list[str] = []
    data: bytes | None = None
    try:
        for entry in walk(skill.root, skill.folder, limits, protected=False):
            if entry.kind != "file":
                continue
            here = "/".join(entry.parts)
            names.append(here)
            if here == rel and data is None:
                fd = open_entry(entry)
                if fd is None:
                    raise ToolError(f"Refused: {rel!r} of skill {skill.name!r} is no longer a regular file.")
                try:
                    data = read_descriptor(fd, name=f"{skill.name}/{rel}", what="skill file", limit=MAX_FILE_BYTES)
                except InputFileError as exc:
                    raise ToolError(str(exc)) from None
                finally:
                    os.close(fd)
    except ToolError as exc:
        if data is None and not names:
            raise ToolError(f"Skill {skill.name!r} cannot be read now: {exc}") from None
        raise
    if data is None:
        shown = ", ".join(names[:LIST_FILES]) or "none"
        raise ToolError(f"Skill {skill.name!r} has no file {rel!r} (links are not followed). Its files: {shown}.")
    if b"\x00" in data[:8192]:
        raise ToolError(f"{rel!r} of skill {skill.name!r} is a binary file; read_skill reads text files.")
    text = data.decode("utf-8", errors="replace")
    if rel == SKILL_FILE:
        try:
            _name, _description, text = parse_skill(text, f"skill {skill.name!r}")
        except SkillError as exc:
            raise ToolError(f"{exc}.") from None
        others = [n for n in names if n != SKILL_FILE]
        listing = ", ".join(others[:LIST_FILES]) + (" ..." if len(others) > LIST_FILES else "")
        head = f"Skill {skill.name}: {skill.description}\n"
        head += f"Files of its folder (read_skill(name, path)): {listing}\n\n" if others else "\n"
        text = head + text
    return _page(text, offset, skill.name, rel)


def _page(text: str, offset: int, name: str, rel: str) -> str:
    if offset >= len(text) and offset:
        return f"[Nothing at offset {offset}: {rel} of skill {name} has {len(text)} characters.]"
    page = text[offset: offset + PAGE_CHARS]
    end = offset + len(page)
    if end < len(text):
        page += (
            f"\n\n[Characters {offset}-{end} of {len(text)}. Next page: "
            f'read_skill(name="{name}", path="{rel}", offset={end}).]'
        )
    return page


@tool(READ_SKILL, args_schema=ReadSkillArgs)
async def read_skill(
    name: str,
    path: str = SKILL_FILE,
    offset: int = 0,
    *,
    # LangChain injects only into a bare `ToolRuntime` annotation, hence `= None` (outside a graph) and the ignore
    runtime: ToolRuntime = None,  # type: ignore[assignment]
) -> str:
    """Open a skill listed in your instructions: its SKILL.md instructions (and the names of the files
    beside it), or one of those files with path. Read-only."""
    rel = _relative(path)
    folders = skill_folders(context_field(getattr(runtime, "context", None), "skills", None))
    skills = await asyncio.to_thread(known_skills, folders)
    skill = skills.get(str(name).strip())
    if skill is None:
        raise ToolError(f"Unknown skill {name!r}. Skills of this run: {', '.join(skills) or 'none'}.")
    return await asyncio.to_thread(_read_in_skill, skill, rel, max(0, int(offset)))

