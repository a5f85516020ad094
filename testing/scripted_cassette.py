"""The scripted OpenAI-compatible server (``scripted_server.py``) serving a cassette folder
(recorded with ``smart-agent run --record DIR``; matched as ``--replay`` matches, see
docs/record_replay.md): a recorded request gets its recorded status, headers and body, byte for byte."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..cassette import MISS_HEADER, Cassette, parse_body
from .scripted_http import ScriptedHandler

__all__ = ["answer_from_cassette"]


def answer_from_cassette(
    h: ScriptedHandler, cassette: Cassette, raw: bytes, *, record: Callable[[Any, bytes], None], script_left: bool
) -> bool:
    """Answer a POST from the cassette (cassette/store.py: exact, then tolerant match) as it was
    recorded; True when answered (a miss too, an HTTP 400 naming the request, when no script or
    responder is left: ``script_left`` false). ``record(body, raw)`` keeps each request answered here."""
    path = h.path.split("?", 1)[0]
    body = parse_body(raw)
    found = cassette.find(path, body)
    if found is None:
        if script_left:
            return False  # the script answers what the cassette does not hold
        record(body, raw)
        h.send_api_error(400, str(cassette.miss(path, body)), type_="replay_miss", code="replay_miss",
                      headers={"x-should-retry": "false", MISS_HEADER: "miss"})
        return True
    record(body, raw)
    h.send_response(found.status)
    for name, value in found.headers.items():
        h.send_header(name, value)
    h.send_header("Content-Length", str(len(found.content)))
    h.end_headers()
    h.wfile.write(found.content)
    h.wfile.flush()
    return True
