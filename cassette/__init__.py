"""Record model traffic into a cassette and replay it offline (the CLI's ``--record`` /
``--replay``; docs/record_replay.md).

The API (all the eval harness and the CLI need)::

    from smart_agent.cassette import recording, replaying, ReplayMiss

    async with recording("cassettes/mult"):       # every model request and response is stored
        await graph.ainvoke({"task": ...}, config=..., context=Context(model="openai:gpt-4o-mini"))

    async with replaying("cassettes/mult") as s:  # the same requests answered from the folder, no network
        await graph.ainvoke(...)                  # a request not in it: ReplayMiss (one line naming it)
        s.misses                                  # the misses answered in this session
                                                  # (one the run caught is raised when the block ends)

(``with`` works as well; ``async with`` also closes the session's HTTP clients.)

* :func:`recording` / :func:`replaying` - a :class:`CassetteSession` for a folder; while it is
  active (a context variable: concurrent runs may each have their own) every ``openai:`` model
  (any OpenAI-compatible server) that ``models.load_chat_model`` builds from a ``provider:model``
  string sends its requests through the session's httpx transport (cassette/transport.py). A model
  passed in as an instance is not intercepted: build it with ``**session.client_kwargs()``.
  Other providers are refused while a session is active (``ModelConfigError``).
* :class:`ReplayMiss` - raised by ``models.invoke_model`` when the cassette holds no answer; a
  ``ValueError``, so the CLI prints it as one line and exits 2.
* :class:`CassetteError` - a cassette folder or file that cannot be used (one line, ``ValueError``).
* :class:`Cassette` - a folder's interactions and the matching (``find`` / ``answer``), also
  used by the scripted server's ``--cassette``.
* :func:`normalize_request`, :func:`exact_key`, :func:`tolerant_key` - the matching rules
  (cassette/match.py): an exact match of the normalized request first, then the tolerant match.

Files: one JSON file per request, ``NNNN.json`` in recording order (cassette/store.py).
"""

from __future__ import annotations

import os

from .match import canonical, endpoint, exact_key, normalize_request, tolerant_key, tolerant_view
from .store import Cassette, CassetteError, Interaction, Recorder, ReplayMiss, load_interactions, parse_body
from .transport import MISS_HEADER, CassetteSession, active_session, miss_from_error

__all__ = [
    "MISS_HEADER", "Cassette", "CassetteError", "CassetteSession", "Interaction", "Recorder", "ReplayMiss",
    "active_session", "canonical", "endpoint", "exact_key", "load_interactions", "miss_from_error",
    "normalize_request", "parse_body", "recording", "replaying", "tolerant_key", "tolerant_view",
]  # fmt: skip


def recording(folder: str | os.PathLike[str]) -> CassetteSession:
    """A session storing every model request and response into ``folder`` (created if
    needed; numbering continues after the files already there)."""
    return CassetteSession(folder, "record")


def replaying(folder: str | os.PathLike[str], *, strict: bool = True) -> CassetteSession:
    """A session answering model requests from ``folder``, without any network. The folder
    is read now: a missing folder or a bad file is a CassetteError. ``strict``: a miss that
    the run caught and went on from is raised when the block ends (:class:`CassetteSession`)."""
    return CassetteSession(folder, "replay", strict=strict)
