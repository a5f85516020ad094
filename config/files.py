"""Files and texts a user or another program hands the CLI, read with bounds.

Every file the CLI or a served graph reads on a user's behalf (an eval suite, an agents file,
an MCP config, a price table, an output schema, a decisions file, a memory import, a cassette)
goes through :func:`read_text_file`: only a regular file is read (a FIFO, a device such as
``/dev/zero``, a socket or a folder is refused before a byte is read, without blocking), and
at most ``limit`` bytes of it. Its text is parsed with :func:`load_json` / :func:`load_yaml`,
which refuse nesting deeper than ``max_depth`` and (YAML) documents whose aliases expand to
more than ``max_nodes`` values ("billion laughs"), before anything walks the result.

Every failure is an :class:`InputFileError` (a ``ValueError``) whose message is one line that
names the file: callers add nothing but their own exit code.
"""

from __future__ import annotations

import json
import os
import re
import stat
from collections.abc import Callable
from typing import Any, BinaryIO

__all__ = [
    "DEFAULT_MAX_BYTES",
    "DEFAULT_MAX_DEPTH",
    "DEFAULT_MAX_NODES",
    "InputFileError",
    "json_depth_problem",
    "load_json",
    "load_yaml",
    "read_bytes_file",
    "read_descriptor",
    "read_stream_bytes",
    "read_text_file",
]

#: Largest input file read by default (an eval suite or agents file is kilobytes).
DEFAULT_MAX_BYTES = 20_000_000
#: Deepest nesting of arrays/objects accepted in a JSON or YAML input.
DEFAULT_MAX_DEPTH = 200
#: Most values a YAML document may expand to once its aliases are followed.
DEFAULT_MAX_NODES = 1_000_000


class InputFileError(ValueError):
    """A file or text given as input cannot be used; the message is one line naming it."""


def read_text_file(
    path: str | os.PathLike[str], *, what: str = "file", limit: int = DEFAULT_MAX_BYTES, errors: str = "strict"
) -> str:
    """The UTF-8 text of the regular file ``path`` (at most ``limit`` bytes).

    ``what`` names the file in the error ("eval suite", "--output-schema"). Refused without
    reading: a missing file, a folder, a FIFO, a device, a socket; refused after reading at most
    ``limit`` + 1 bytes: a larger file, and (with ``errors="strict"``) bytes that are not UTF-8."""
    data = read_bytes_file(path, what=what, limit=limit)
    try:
        return data.decode("utf-8", errors=errors)
    except UnicodeDecodeError as exc:
        raise InputFileError(f"{what} {os.fspath(path)}: not UTF-8 text (byte {exc.start})") from None


def read_bytes_file(path: str | os.PathLike[str], *, what: str = "file", limit: int = DEFAULT_MAX_BYTES) -> bytes:
    """The bytes of the regular file ``path``, with :func:`read_text_file`'s refusals."""
    name = os.fspath(path)
    try:
        # O_NONBLOCK: opening a FIFO with no writer would wait forever; on a regular file it changes nothing.
        fd = os.open(name, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        raise InputFileError(f"{what} {name}: no such file") from None
    except IsADirectoryError:
        raise InputFileError(f"{what} {name}: is a folder, not a file") from None
    except OSError as exc:
        raise InputFileError(f"{what} {name}: cannot open it ({exc.strerror or exc})") from None
    try:
        return read_descriptor(fd, name=name, what=what, limit=limit)
    finally:
        os.close(fd)


def read_descriptor(fd: int, *, name: str, what: str = "file", limit: int = DEFAULT_MAX_BYTES, whole: bool = True
                    ) -> bytes:
    """At most ``limit`` bytes of the open regular file ``fd`` (left open; ``name`` names it in the
    error), with :func:`read_text_file`'s refusals. ``whole=False``: a larger file is not refused,
    its first ``limit`` + 1 bytes are returned (the caller cuts it, saying so)."""
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise InputFileError(f"{what} {name}: {_kind(mode)}, not a regular file")
        chunks: list[bytes] = []
        size = 0
        while size <= limit:
            chunk = os.read(fd, min(1 << 20, limit + 1 - size))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
        if size > limit and whole:
            raise InputFileError(f"{what} {name}: larger than {limit} bytes")
        return b"".join(chunks)
    except OSError as exc:
        raise InputFileError(f"{what} {name}: cannot read it ({exc.strerror or exc})") from None


def read_stream_bytes(stream: BinaryIO, *, what: str = "standard input", limit: int = DEFAULT_MAX_BYTES) -> bytes:
    """At most ``limit`` bytes of ``stream`` (standard input given as ``-``): a larger input
    (``/dev/zero`` piped in) is refused after ``limit`` + 1 bytes, never read whole."""
    try:
        data = stream.read(limit + 1)
    except OSError as exc:
        raise InputFileError(f"{what}: cannot read it ({exc.strerror or exc})") from None
    if len(data) > limit:
        raise InputFileError(f"{what}: larger than {limit} bytes")
    return data


def _kind(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "a folder"
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe)"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "a special file"


# A JSON string (escapes included) or one bracket: the only tokens nesting depends on.
_JSON_TOKENS = re.compile(r'"(?:[^"\\]|\\.)*"|[\[\]{}]', re.DOTALL)


def json_depth_problem(text: str, max_depth: int = DEFAULT_MAX_DEPTH) -> str | None:
    """Why JSON ``text`` nests too deeply to parse (None when it does not): one pass in C over
    its strings and brackets, before ``json.loads`` (which recurses per level) sees it."""
    depth = 0
    for token in _JSON_TOKENS.finditer(text):
        c = token.group()[0]
        if c in "[{":
            depth += 1
            if depth > max_depth:
                return f"nested more than {max_depth} levels deep"
        elif c in "]}":
            depth -= 1
    return None


def load_json(text: str, *, what: str = "input", max_depth: int = DEFAULT_MAX_DEPTH) -> Any:
    """``json.loads(text)`` with a nesting bound; a problem is an :class:`InputFileError`
    naming ``what`` (and the line and column of a syntax error)."""
    problem = json_depth_problem(text, max_depth)
    if problem:
        raise InputFileError(f"{what}: {problem}")
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputFileError(f"{what}: not valid JSON ({exc.msg} at line {exc.lineno} column {exc.colno})") from None
    except (RecursionError, ValueError) as exc:  # (RecursionError cannot pass the depth check; kept for safety)
        raise InputFileError(f"{what}: not valid JSON ({type(exc).__name__})") from None


def load_yaml(
    text: str,
    *,
    what: str = "input",
    max_depth: int = DEFAULT_MAX_DEPTH,
    max_nodes: int = DEFAULT_MAX_NODES,
) -> Any:
    """``yaml.safe_load(text)`` with bounds: the document's nodes are composed first (aliases
    are shared nodes there, so even a "billion laughs" document is a few hundred of them), their
    expanded count and depth are measured, and only a document within ``max_nodes`` and
    ``max_depth`` is turned into Python values. A problem is an :class:`InputFileError`."""
    import yaml

    try:
        loader = yaml.SafeLoader(text)
        try:
            node = loader.get_single_node()
            if node is None:
                return None
            problem = _yaml_size_problem(node, max_depth, max_nodes)
            if problem:
                raise InputFileError(f"{what}: {problem}")
            return loader.construct_document(node)
        finally:
            loader.dispose()
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1}: " if mark is not None else ""
        raise InputFileError(
            f"{what}: {where}not valid YAML ({getattr(exc, 'problem', None) or 'syntax error'})"
        ) from None
    except RecursionError:
        raise InputFileError(f"{what}: nested too deeply") from None


def _yaml_size_problem(root: Any, max_depth: int, max_nodes: int) -> str | None:
    """How a composed YAML document breaks the bounds (None: it does not). Sizes are counted
    once per node object (an alias is the node it names), so the count is the size of the
    document with every alias expanded, found in time linear in the nodes actually written."""
    import yaml

    sizes: dict[int, int] = {}
    # Iterative post-order walk: (node, depth, children visited?)
    stack: list[tuple[Any, int, bool]] = [(root, 1, False)]
    on_path: set[int] = set()

    def children(node: Any) -> list[Any]:
        if isinstance(node, yaml.SequenceNode):
            return list(node.value)
        if isinstance(node, yaml.MappingNode):
            return [part for pair in node.value for part in pair]
        return []

    while stack:
        node, depth, done = stack.pop()
        key = id(node)
        if done:
            on_path.discard(key)
            sizes[key] = 1 + sum(sizes[id(c)] for c in children(node))
            if sizes[key] > max_nodes:
                return f"expands to more than {max_nodes} values (aliases)"
            continue
        if key in sizes:
            continue
        if depth > max_depth:
            return f"nested more than {max_depth} levels deep"
        if key in on_path:
            return "an alias refers to itself"
        on_path.add(key)
        stack.append((node, depth, True))
        stack.extend((c, depth + 1, False) for c in children(node) if id(c) not in sizes)
    return None


def existing_folder(text: str) -> str:
    """A folder a user names (``--workspace``): an existing folder, as an absolute path."""
    from .checks import shown, text_problem

    problem = text_problem(text)
    if problem:
        raise ValueError(f"the folder name {problem}")
    path = os.path.abspath(text)
    if not os.path.exists(path):
        raise ValueError(f"{shown(text)} does not exist")
    if not os.path.isdir(path):
        raise ValueError(f"{shown(text)} is not a directory")
    return path


def json_file(what: str) -> Callable[[str], Any]:
    """A flag's text as the path of a JSON file, read with :func:`read_text_file` and :func:`load_json`
    (``what`` names it in the error: ``--output-schema``)."""

    def parse(text: str) -> Any:
        return load_json(read_text_file(text, what=what), what=f"{what} {text}")

    parse.__name__ = "json_file"
    return parse
