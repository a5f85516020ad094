"""Bounds on an untrusted regular expression, checked before the ``regex`` engine compiles it.

``regex.compile`` unrolls the required part of a repeat: ``x{5000000}`` takes 1.5 GB
and ``(x{1000}){1000}`` 260 MB before any search (and its timeout) starts, in one C
call a tool timeout cannot stop. :func:`check_regex_bounds` reads the pattern the way
Python's ``re`` does (the syntax ``grep`` accepts; ``re`` validates it first) and
refuses, with a message for the model:

* a repeat count (``{n}``, ``{n,}``, ``{n,m}``, ``{,m}``) over :data:`MAX_REPEAT`;
* a pattern whose repeats unroll to more than :data:`MAX_UNROLLED` characters (each
  character weighs the product of the counts of the repeats around it, so nesting
  such as ``(x{100}){1000}`` is caught);
* what ``regex`` reads differently from ``re`` and could hide a repeat: a ``{`` that is
  not a repeat count but is closed later (``{e<=3}`` is fuzzy matching in ``regex``),
  the verbose flag ``(?x)`` (``regex`` reads ``x{1 000 000}`` as a repeat), and a ``[``
  inside a set (``[[:alpha:]]`` is a POSIX class in ``regex``).

Everything ``regex`` adds beyond ``re`` (``(?r)``, ``\\L<name>``, ``\\p{..}``,
recursion, ...) is already refused by ``re``'s validation. The scan is linear and
never recurses.
"""

from __future__ import annotations

import re

from .guards import ToolError

__all__ = ["MAX_REPEAT", "MAX_UNROLLED", "check_regex_bounds"]

MAX_REPEAT = 1000  # the largest count of one repeat
MAX_UNROLLED = 10_000  # pattern characters once the repeats are unrolled (a few MB compiled)

_COUNT = re.compile(r"\{([0-9]*)(,([0-9]*))?\}")
_FLAGS = re.compile(r"\(\?([aiLmsux-]*)([:)])")
_GROUP_STARTS = ("(?:", "(?=", "(?!", "(?<=", "(?<!", "(?>")
_NAMED = re.compile(r"\(\?P<[^>)]*>")
_BACKREF = re.compile(r"\(\?P=[^)]*\)")
_CONDITION = re.compile(r"\(\?\([^)]*\)")


def _refuse(reason: str) -> ToolError:
    return ToolError(f"pattern refused: {reason}.")


def _shown(digits: str) -> str:
    digits = digits.lstrip("0") or "0"
    return digits if len(digits) <= 20 else f"{digits[:6]}... ({len(digits)} digits)"


def _count(digits: str) -> int:
    if len(digits.lstrip("0")) > len(str(MAX_REPEAT)) or int(digits) > MAX_REPEAT:
        raise _refuse(f"repeat count {_shown(digits)} over {MAX_REPEAT}")
    return int(digits)


class _Frame:
    """One group being read: the weight of its content so far and of its last item."""

    __slots__ = ("last", "total")

    def __init__(self, total: int = 0) -> None:
        self.total = total
        self.last = 0

    def add(self, weight: int) -> None:
        self.total += weight
        self.last = weight


def _skip_escape(pattern: str, i: int) -> int:
    """The index after the escape starting at ``pattern[i] == '\\'``."""
    if i + 1 >= len(pattern):
        raise _refuse("it ends with a lone backslash")
    if pattern[i + 1] == "N" and pattern.startswith("{", i + 2):  # \N{LATIN SMALL LETTER A}
        end = pattern.find("}", i + 3)
        if end < 0:
            raise _refuse(r"unfinished \N{...} escape")
        return end + 1
    return i + 2


def _skip_set(pattern: str, i: int) -> int:
    """The index after the set starting at ``pattern[i] == '['``."""
    j = i + 1
    if pattern.startswith("^", j):
        j += 1
    if pattern.startswith("]", j):  # a ']' first is a member
        j += 1
    while j < len(pattern):
        c = pattern[j]
        if c == "\\":
            j = _skip_escape(pattern, j)
        elif c == "]":
            return j + 1
        elif c == "[":
            raise _refuse(
                f"'[' inside a set (position {j}); write '\\[' for a literal '[' (POSIX classes such as "
                "[[:alpha:]] are not supported)"
            )
        else:
            j += 1
    raise _refuse(f"the set opened at position {i} is not closed")


def _skip_comment(pattern: str, i: int) -> int:
    """The index after the comment ``(?#...)`` starting at ``i`` (``\\)`` does not end it, as in ``re``)."""
    j = i + 3
    while j < len(pattern):
        if pattern[j] == "\\":
            j += 2
        elif pattern[j] == ")":
            return j + 1
        else:
            j += 1
    raise _refuse(f"the comment at position {i} is not closed")


def _open_group(pattern: str, i: int) -> tuple[int, bool]:
    """``(index after the group's opening, whether it opens a group)`` for ``pattern[i] == '('``;
    a backreference ``(?P=name)`` and global flags ``(?i)`` open none."""
    if not pattern.startswith("(?", i):
        return i + 1, True
    for start in _GROUP_STARTS:
        if pattern.startswith(start, i):
            return i + len(start), True
    for regexp, opens in ((_NAMED, True), (_BACKREF, False), (_CONDITION, True)):
        found = regexp.match(pattern, i)
        if found:
            return found.end(), opens
    flags = _FLAGS.match(pattern, i)
    if flags:
        if "x" in flags.group(1):
            raise _refuse("the verbose flag (?x) is not supported; write the pattern without it")
        return flags.end(), flags.group(2) == ":"
    raise _refuse(f"unsupported group syntax at position {i}")


def check_regex_bounds(pattern: str) -> None:
    """Raise :class:`ToolError` when compiling ``pattern`` could take more than a few MB (see the module doc)."""
    frames = [_Frame()]
    i, n = 0, len(pattern)
    while i < n:
        c, frame = pattern[i], frames[-1]
        if c == "\\":
            end = _skip_escape(pattern, i)
            frame.add(end - i)
            i = end
        elif c == "[":
            end = _skip_set(pattern, i)
            frame.add(end - i)
            i = end
        elif c == "(" and pattern.startswith("(?#", i):
            i = _skip_comment(pattern, i)  # the last item stays the one a repeat after it applies to
        elif c == "(":
            i, opens = _open_group(pattern, i)
            if opens:
                frames.append(_Frame(total=2))  # the parentheses
            else:
                frame.add(2)
        elif c == ")":
            if len(frames) == 1:
                raise _refuse(f"unbalanced ')' at position {i}")
            inner = frames.pop()
            frames[-1].add(inner.total)
            i += 1
        elif c == "|":
            frame.total += 1
            frame.last = 0
            i += 1
        elif c == "{":
            i = _brace(pattern, i, frame)
        elif c in "*+?":
            i += 2 if pattern.startswith(("?", "+"), i + 1) else 1  # lazy / possessive
        else:
            frame.add(1)
            i += 1
        if frames[-1].total > MAX_UNROLLED:  # totals only grow, and every group's adds up to the outermost
            raise _refuse(
                f"its repeats unroll to more than {MAX_UNROLLED} characters (the counts of nested repeats "
                "multiply, as in '(x{100}){100}'); use smaller counts"
            )
    if len(frames) > 1:
        raise _refuse("a group is not closed")

def _brace(pattern: str, i: int, frame: _Frame) -> int:
    """Read a ``{`` at ``i``: a repeat count (weighs the last item), ``{}`` or an unclosed ``{`` (literal)."""
    count = _COUNT.match(pattern, i)
    if count is None or count.group(0) == "{}":
        if count is None and pattern.rfind("}") > i:
            raise _refuse(
                f"'{{' at position {i} is neither a repeat count such as {{3}} or {{2,5}} nor escaped; write '\\{{' "
                "for a literal brace (fuzzy matching such as {e<=1} is not supported)"
            )
        frame.add(1)
        return i + 1
    low, comma, high = count.group(1), count.group(2), count.group(3)
    times = _count(low) if low else 0
    if comma and high:
        _count(high)
    factor = max(times, 1)
    frame.total += frame.last * (factor - 1)
    frame.last *= factor
    end = count.end()
    return end + 1 if pattern.startswith(("?", "+"), end) else end
