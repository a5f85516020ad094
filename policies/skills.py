"""Skills and project instructions: the skills (Agent Skills folders, ``SKILL.md``) a run lists in
its system prompt and opens on demand, and the ``AGENTS.md`` files read into it
(``tools/skills.py`` reads them at run start; ``models/prompts.py`` shows them; ``docs/skills.md``).

Both are read-only content: they never change which tools a run has or what those tools may do.
A served graph's client may only choose among the server's own skills folders (``client="subset"``),
turn the project instructions off, or lower their size cap.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

from ..config import settings
from ..config.fields import Settings, setting
from ..config.files import existing_folder

__all__ = ["HOME_SKILLS", "SkillSettings", "skill_folders", "skills_key"]

#: The skills folder of the data folder, always read after the run's own (``$SMART_AGENT_HOME/skills``).
HOME_SKILLS = "skills"


def _folder_names(value: object) -> bool:
    return isinstance(value, list) and all(
        isinstance(v, str) and v.strip() and "\x00" not in v and len(v) <= 4096 for v in value
    )


@dataclass(kw_only=True)
class SkillSettings(Settings):
    """Skills and project instructions"""

    skills: list[str] = setting(
        [],
        help="Folders holding skills: a folder per skill with a SKILL.md (YAML front matter name and "
        "description, then Markdown). Each run lists every skill's name and description in the system prompt; "
        "the model opens one with the read_skill tool. $SMART_AGENT_HOME/skills is read too. A served graph's "
        "client may only name folders of the server's own list.",
        rule=(_folder_names, "a list of folder names"),
        parse=existing_folder,
        metavar="DIR",
        repeat=True,
        client="subset",
    )
    agents_md: bool = setting(
        True,
        help="Read AGENTS.md of the workspace (and of $SMART_AGENT_HOME) into the system prompt at the start of "
        "each run. Its text guides the model; it never changes what the tools may do.",
        client="off",
    )
    agents_md_max_chars: int = setting(
        12_000,
        help="Most characters of each AGENTS.md put in the system prompt (12000: about 3000 tokens); a longer "
        "file is cut there, with a note saying so.",
        bounds=(100, 1_000_000),
        client="lower",
    )


def skill_folders(skills: list[str] | tuple[str, ...] | None) -> tuple[str, ...]:
    """The skills folders of a run whose ``skills`` setting is ``skills``: those, then the data
    folder's (``$SMART_AGENT_HOME/skills``), each once, as given (resolved when they are read)."""
    return _folders(tuple(skills or ()), settings.env_value(settings.PREFIX + "HOME"))[0]


def skills_key(skills: list[str] | tuple[str, ...] | None) -> str:
    """The key of a run's skills in the state (``skills``): its folders, one a line (asked each turn)."""
    return _folders(tuple(skills or ()), settings.env_value(settings.PREFIX + "HOME"))[1]


@functools.lru_cache(maxsize=64)
def _folders(skills: tuple[str, ...], _home: str | None) -> tuple[tuple[str, ...], str]:
    folders = tuple(dict.fromkeys([*skills, str(settings.data_home() / HOME_SKILLS)]))
    return folders, "\n".join(folders)
