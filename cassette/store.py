"""Cassette files: one JSON file per model request, in a folder.

A file ``NNNN.json`` (``NNNN`` the request's number in recording order, from 0001) holds::

    {"format": "smart-agent-cassette/1",
     "seq": 1,
     "request": {"method": "POST", "url": "http://127.0.0.1:8000/v1/chat/completions",
                 "path": "/v1/chat/completions", "body": {...the request's JSON...}},
     "response": {"status": 200, "headers": {"content-type": "application/json"},
                  "json": {"id": "chatcmpl-1", "choices": [...], "usage": {...}}}}

The response body is the decoded text as the client read it, in one of these forms:
``"json": {...}`` (a JSON response, stored parsed so that it reads and edits easily; replayed
as its JSON text); ``"events": ["data: {...}", ..., "data: [DONE]"]`` (a streamed response,
``text/event-stream``: its SSE events, each without the blank line that ends it, replayed
byte for byte); ``"body": "..."`` (any other text); ``"body_base64"`` (not UTF-8).
No request header is stored (they carry the API key), and every field written is redacted
(redact.py: a URL's password, key parameters, credential headers and fields, the environment's
key values become ``***``); a live request is redacted the same way before it is matched. Match
keys are computed from the request when the folder is read (cassette/match.py), never stored,
so a file may be edited by hand. A file is read with inputs.py's bounds (a regular file, at most
:data:`MAX_FILE_BYTES`, nesting at most 200 deep): any other is a CassetteError naming it.
"""

from __future__ import annotations

import base64
import json
import os
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..config.files import DEFAULT_MAX_BYTES, InputFileError, load_json, read_text_file
from ..runs.redact import redact_value
from .match import describe_request, exact_key, tolerant_key

FORMAT = "smart-agent-cassette/1"
#: Largest cassette file read (one request and its response; a long streamed answer is well under it).
MAX_FILE_BYTES = DEFAULT_MAX_BYTES
#: Response headers not stored: the transport's own, or different on every response.
_DROPPED_HEADERS = frozenset(
    {"date", "content-length", "transfer-encoding", "connection", "keep-alive", "content-encoding", "set-cookie",
     "server", "x-request-id", "openai-processing-ms", "cf-ray", "req-cost"}
)  # fmt: skip


class CassetteError(ValueError):
    """A cassette folder or file that cannot be used; one line naming it."""


class ReplayMiss(ValueError):
    """No recorded response answers a request; the message is one line naming the request
    (a ``ValueError``: the cassette does not fit the run, which the CLI reports with exit 2)."""


@dataclass
class Interaction:
    """One recorded request and its response."""

    seq: int
    method: str
    url: str
    path: str
    body: Any  # the request's JSON (or its text when it is not JSON)
    status: int
    headers: dict[str, str]
    content: bytes  # the response body, decoded
    source: str = ""  # the file it was read from
    exact: str = field(init=False)
    tolerant: str = field(init=False)

    def __post_init__(self) -> None:
        self.exact = exact_key(self.path, self.body)
        self.tolerant = tolerant_key(self.path, self.body)

    def to_json(self) -> dict[str, Any]:
        response: dict[str, Any] = {"status": self.status, "headers": self.headers}
        try:
            text = self.content.decode("utf-8")
        except UnicodeDecodeError:
            response["body_base64"] = base64.b64encode(self.content).decode("ascii")
        else:
            events = text[:-2].split("\n\n") if text.endswith("\n\n") else None
            kind = self.headers.get("content-type", "")
            if events and "event-stream" in kind and _sse_text(events) == text:
                response["events"] = events  # an SSE stream: one event an item, easier to read and edit
            elif "json" in kind and _json_or_none(text) is not None:
                response["json"] = json.loads(text)
            else:
                response["body"] = text
        request = {"method": self.method, "url": self.url, "path": self.path, "body": self.body}
        return {"format": FORMAT, "seq": self.seq, "request": request, "response": response}

    @classmethod
    def from_json(cls, data: Any, source: str) -> Interaction:
        try:
            if data.get("format") != FORMAT:
                raise ValueError(f"format is {data.get('format')!r}, expected {FORMAT!r}")
            req, res = data["request"], data["response"]
            if "body_base64" in res:
                content = base64.b64decode(res["body_base64"])
            elif "events" in res:
                content = _sse_text([str(e) for e in res["events"]]).encode("utf-8")
            elif "json" in res:
                content = json.dumps(res["json"], ensure_ascii=False).encode("utf-8")
            else:
                content = str(res["body"]).encode("utf-8")
            return cls(
                seq=int(data["seq"]), method=str(req.get("method", "POST")), url=str(req.get("url", "")),
                path=str(req["path"]), body=req.get("body"), status=int(res["status"]),
                headers={str(k): str(v) for k, v in (res.get("headers") or {}).items()}, content=content,
                source=source,
            )  # fmt: skip
        except (AttributeError, KeyError, TypeError, ValueError) as exc:
            problem = f"{type(exc).__name__}: {exc}"
            raise CassetteError(f"cassette file {source}: not a recorded interaction ({problem})") from None


def _sse_text(events: list[str]) -> str:
    return "".join(event + "\n\n" for event in events)


def _json_or_none(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return None


def kept_headers(headers: Any) -> dict[str, str]:
    """The response headers a cassette stores (lower-case names)."""
    return {str(k).lower(): str(v) for k, v in headers.items() if str(k).lower() not in _DROPPED_HEADERS}


def parse_body(raw: bytes) -> Any:
    """A request body as stored: its JSON, else its text."""
    text = raw.decode("utf-8", "replace")
    try:
        return json.loads(text)
    except ValueError:
        return text


def load_interactions(folder: str | os.PathLike[str]) -> list[Interaction]:
    """Every interaction in ``folder``, in recording order; a CassetteError when the folder
    does not exist or a file is not a recorded interaction."""
    path = Path(folder)
    if not path.is_dir():
        raise CassetteError(f"cassette folder {str(folder)!r} does not exist")
    out = []
    for file in sorted(path.glob("*.json")):
        try:
            # a regular file only (a FIFO or a link to /dev/zero is refused unread), bounded in size and nesting
            text = read_text_file(file, what="cassette file", limit=MAX_FILE_BYTES)
            if not text:  # claimed by a recorder whose request has no response (yet)
                continue
            data = load_json(text, what=f"cassette file {file}")
        except InputFileError as exc:
            raise CassetteError(str(exc)) from None
        out.append(Interaction.from_json(data, str(file)))
    return sorted(out, key=lambda i: (i.seq, i.source))


class Cassette:
    """The recorded interactions of a folder, answering requests (:meth:`find`).

    The candidates of a request are the interactions with its exact key (cassette/match.py)
    or, when there are none, those with its tolerant key. Of the candidates, the first in
    recording order that this cassette has not replayed yet answers; when all were replayed,
    the last one answers again (a run repeated against one cassette). Thread-safe."""

    def __init__(self, folder: str | os.PathLike[str]) -> None:
        self.folder = str(folder)
        self.interactions = load_interactions(folder)
        self._used: set[int] = set()
        self._lock = threading.Lock()
        #: ``(seq, "exact" | "tolerant")`` of every request answered, in order.
        self.matches: list[tuple[int, str]] = []

    def find(self, path: str, body: Any) -> Interaction | None:
        """The interaction that answers a request (marked replayed), or None."""
        body = redact_value(body)  # as it was stored (Recorder.write): matching never depends on a secret
        exact, tolerant = exact_key(path, body), tolerant_key(path, body)
        with self._lock:
            for attr, key in (("exact", exact), ("tolerant", tolerant)):
                candidates = [i for i in self.interactions if getattr(i, attr) == key]
                if candidates:
                    chosen = next((i for i in candidates if id(i) not in self._used), candidates[-1])
                    self._used.add(id(chosen))
                    self.matches.append((chosen.seq, attr))
                    return chosen
        return None

    def answer(self, path: str, body: Any) -> Interaction:
        """:meth:`find`, or raise :meth:`miss`."""
        found = self.find(path, body)
        if found is None:
            raise self.miss(path, body)
        return found

    def miss(self, path: str, body: Any) -> ReplayMiss:
        """The error of a request this cassette does not answer: one line naming the request."""
        body = redact_value(body)
        return ReplayMiss(
            f"replay: no recorded response in {self.folder} ({len(self.interactions)} recorded) for "
            f"{describe_request(path, body)} (exact key {exact_key(path, body)[:12]}, "
            f"tolerant key {tolerant_key(path, body)[:12]})"
        )


class Recorder:
    """Writes interactions into a folder (created if needed), numbered after the files
    already there: several runs may record into one cassette, one after the other or at
    once (a number is claimed by creating its file exclusively)."""

    def __init__(self, folder: str | os.PathLike[str]) -> None:
        self.folder = Path(folder)
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise CassetteError(f"cannot create cassette folder {str(folder)!r}: {exc.strerror or exc}") from None
        if not self.folder.is_dir():
            raise CassetteError(f"cassette folder {str(folder)!r} is not a directory")
        self._lock = threading.Lock()
        self._next = 1 + max((_seq(p.name) for p in self.folder.glob("*.json")), default=0)

    def claim(self) -> int:
        """The next free request number (its file created empty, so no other recorder takes it)."""
        with self._lock:
            while True:
                seq, self._next = self._next, self._next + 1
                try:
                    fd = os.open(self.folder / f"{seq:04d}.json", os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
                except FileExistsError:
                    continue
                os.close(fd)
                return seq

    def write(self, interaction: Interaction) -> Path:
        """Store ``interaction`` in its claimed file (atomically replaced), its credentials
        redacted (redact.py: a URL's password, key parameters, credential headers and fields,
        the environment's key values): no secret reaches a cassette."""
        target = self.folder / f"{interaction.seq:04d}.json"
        tmp = target.with_suffix(".json.tmp")
        data = redact_value(interaction.to_json())
        tmp.write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
        os.replace(tmp, target)
        return target


def _seq(name: str) -> int:
    head = name.split(".", 1)[0]
    return int(head) if head.isdigit() else 0
