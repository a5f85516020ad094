"""Race-free, confined file access for the file tools.

A path the model gives is first judged by :func:`resolve_in_workspace` (``..``,
``~``, absolute paths outside, links pointing outside), then opened *component by
component* from a directory handle on the workspace root (``openat``-style, every
step with ``O_NOFOLLOW``), so swapping a component for a symbolic link between the
check and the open cannot redirect the access: a symlink anywhere inside the
workspace is refused. The workspace root itself is resolved once and trusted.

Protected areas are refused for reading, writing and listing (and hidden from
listings): smart-agent's data folder (``$SMART_AGENT_HOME``, default
``./.smart-agent``), any folder named ``.smart-agent``, any ``.git`` (compared
case-insensitively) and the plugins folder (``$SMART_AGENT_PLUGINS``). They are
recognised by name, by resolved path and by device/inode of every folder walked
(so a case-insensitive alias or a bind mount does not get around them).

Only regular files are read or written (a FIFO, device or socket is refused
without blocking: opens use ``O_NONBLOCK``), and a file with more than one hard
link is never written (it could be an outside file linked into the workspace).
:func:`replace_regular` edits a file atomically: the new content goes to a temporary
file in the same folder (through the same folder handle), renamed over the original.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import secrets
import stat
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from ..config import settings
from .guards import ToolError, resolve_in_workspace

__all__ = [
    "PROTECTED_NAMES",
    "open_dir",
    "open_regular",
    "plugins_folder",
    "protected_dirs",
    "replace_regular",
    "write_regular",
]

#: Folder names refused wherever they appear in a path (compared with ``casefold``).
PROTECTED_NAMES = frozenset({".git", ".smart-agent"})

DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


def plugins_folder() -> Path | None:
    """The folder plugins load from: ``$SMART_AGENT_PLUGINS`` resolved, or None (no folder plugins)."""
    return settings.plugins_folder()


def protected_dirs() -> list[Path]:
    """The data folder and the plugins folder, resolved (they need not exist)."""
    from ..sessions.store import data_home

    dirs = [data_home().resolve()]
    plugins = plugins_folder()
    if plugins is not None:
        dirs.append(plugins)
    return dirs


def _refused(path: str) -> ToolError:
    return ToolError(
        f"Refused: {path!r} is inside a protected folder (smart-agent's data or plugins folder, "
        "or a .git / .smart-agent folder); file tools never touch it."
    )


def link_error(path: str, name: str | None = None) -> ToolError:
    where = path if name is None or name == path else f"{path!r}: {name}"
    shown = repr(where) if where == path else where
    return ToolError(f"{shown} is a symbolic link; refused (file tools never follow links).")


def not_found(path: str) -> ToolError:
    return ToolError(f"Not found: {path!r} does not exist in the workspace (use list_files to see what does).")


def _os_error(action: str, path: str, exc: OSError) -> ToolError:
    return ToolError(f"Could not {action} {path!r}: {exc.strerror or exc}.")


class Guard:
    """What one call must not reach: protected paths (casefolded) and their inodes. ``protected=False``:
    only the protected names below the root (a skills folder, ``tools/skills.py``, may be inside the data
    folder: its own root is trusted, as a workspace root is)."""

    def __init__(self, protected: bool = True) -> None:
        dirs = protected_dirs() if protected else []
        self.dirs = [str(d).casefold() for d in dirs]
        self.inodes: set[tuple[int, int]] = set()
        for d in dirs:
            try:
                st = os.stat(d)
            except OSError:
                continue
            self.inodes.add((st.st_dev, st.st_ino))

    def check_path(self, full: Path, parts: list[str], shown: str) -> None:
        if any(p.casefold() in PROTECTED_NAMES for p in parts):
            raise _refused(shown)
        text = str(full).casefold()
        if any(text == d or text.startswith(d.rstrip(os.sep) + os.sep) for d in self.dirs):
            raise _refused(shown)

    def check_fd(self, fd: int, shown: str) -> os.stat_result:
        st = os.fstat(fd)
        if (st.st_dev, st.st_ino) in self.inodes:
            raise _refused(shown)
        return st

    def hides(self, name: str, st: os.stat_result | None) -> bool:
        if name.casefold() in PROTECTED_NAMES:
            return True
        return st is not None and (st.st_dev, st.st_ino) in self.inodes


def _split(workspace: str | Path, path: str) -> tuple[Path, list[str]]:
    """The trusted root and the path's components below it (lexical, after the guard check)."""
    resolve_in_workspace(workspace, path)  # type, NUL, '~', '..' and outside-link refusals
    root = Path(workspace).expanduser().resolve()
    if os.path.isabs(path):
        norm = Path(os.path.normpath(path))
        for base in (root, Path(os.path.abspath(Path(workspace).expanduser()))):
            if norm.is_relative_to(base):
                rel = norm.relative_to(base)
                break
        else:  # inside only through a link: the link is refused by the walk below
            raise link_error(path)
    else:
        rel = Path(os.path.normpath(path or "."))
    parts = [p for p in rel.parts if p not in ("", ".")]
    if parts and parts[0] == "..":
        raise ToolError(
            f"Refused: path {path!r} is outside the workspace. Use a path relative to the workspace folder."
        )
    return root, parts


def _lstat_is_link(dir_fd: int, name: str) -> bool:
    try:
        return stat.S_ISLNK(os.lstat(name, dir_fd=dir_fd).st_mode)
    except OSError:
        return False


def open_step(dir_fd: int, name: str, flags: int, shown: str, *, mode: int = 0o666) -> int:
    try:
        return os.open(name, flags | os.O_NOFOLLOW | os.O_CLOEXEC, mode, dir_fd=dir_fd)
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.EMLINK) or _lstat_is_link(dir_fd, name):
            raise link_error(shown, name) from None
        raise


@contextmanager
def walk_to(workspace: str | Path, path: str, *, create: bool, guard: Guard) -> Iterator[tuple[int, list[str]]]:
    """Yield a handle on the folder holding the path's last component (and the components)."""
    root, parts = _split(workspace, path)
    guard.check_path(root.joinpath(*parts), parts, path)
    if create:
        os.makedirs(root, exist_ok=True)
    try:
        fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError as exc:
        raise ToolError(f"The workspace folder {str(root)!r} cannot be opened: {exc.strerror or exc}.") from None
    try:
        guard.check_fd(fd, path)
        for name in parts[:-1]:
            try:
                nxt = open_step(fd, name, DIR_FLAGS, path)
            except FileNotFoundError:
                if not create:
                    raise not_found(path) from None
                with contextlib.suppress(FileExistsError):  # created concurrently: opened (and checked) below
                    os.mkdir(name, 0o777, dir_fd=fd)
                nxt = open_step(fd, name, DIR_FLAGS, path)
            except NotADirectoryError:
                raise ToolError(f"{path!r}: {name!r} is a file, not a folder.") from None
            os.close(fd)
            fd = nxt
            guard.check_fd(fd, path)
        yield fd, parts
    except OSError as exc:
        raise _os_error("open", path, exc) from None
    finally:
        os.close(fd)


def open_regular(workspace: str | Path, path: str, *, protected: bool = True) -> tuple[int, os.stat_result]:
    """Open an existing regular file for reading; returns the descriptor (caller closes it).
    ``protected=False``: a root that may lie in the data folder (a skills folder); names below it
    are still judged."""
    guard = Guard(protected)
    with walk_to(workspace, path, create=False, guard=guard) as (dir_fd, parts):
        if not parts:
            raise ToolError(f"{path!r} is a directory, not a file; use list_files to see its contents.")
        try:
            fd = open_step(dir_fd, parts[-1], os.O_RDONLY | os.O_NONBLOCK, path)
        except FileNotFoundError:
            raise not_found(path) from None
    try:
        st = guard.check_fd(fd, path)
        if stat.S_ISDIR(st.st_mode):
            raise ToolError(f"{path!r} is a directory, not a file; use list_files to see its contents.")
        if not stat.S_ISREG(st.st_mode):
            raise ToolError(f"Refused: {path!r} is not a regular file (a FIFO, device or socket).")
        fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) & ~os.O_NONBLOCK)
    except BaseException:
        os.close(fd)
        raise
    return fd, st


def write_regular(workspace: str | Path, path: str, data: bytes) -> None:
    """Create or replace a regular file's content, creating missing parent folders."""
    guard = Guard()
    with walk_to(workspace, path, create=True, guard=guard) as (dir_fd, parts):
        if not parts:
            raise ToolError(f"{path!r} is a directory; give a file path.")
        name = parts[-1]
        try:
            before = os.lstat(name, dir_fd=dir_fd)
        except FileNotFoundError:
            before = None
        if before is not None:  # refuse before opening: opening a device can have effects
            _check_writable(before, path)
        try:
            fd = open_step(dir_fd, name, os.O_WRONLY | os.O_CREAT | os.O_NONBLOCK, path)
        except IsADirectoryError:
            raise ToolError(f"{path!r} is a directory; give a file path.") from None
        except OSError as exc:
            if exc.errno == errno.ENXIO:  # a FIFO without a reader
                raise ToolError(f"Refused: {path!r} is not a regular file (a FIFO, device or socket).") from None
            raise
    try:
        _check_writable(guard.check_fd(fd, path), path)  # the file actually opened
        os.ftruncate(fd, 0)
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
    except OSError as exc:
        raise _os_error("write", path, exc) from None
    finally:
        os.close(fd)


def replace_regular(
    workspace: str | Path, path: str, edit: Callable[[bytes], bytes], *, max_bytes: int
) -> None:
    """Replace an existing regular file's content with ``edit(old content)``, atomically.

    The same refusals as :func:`write_regular` (links, protected folders, hard links,
    non-regular files); a file or a new content over ``max_bytes`` is refused. The new
    content is written to a temporary file in the same folder and renamed over the
    original (same permissions), so a reader sees the old or the new file, never a
    half-written one; a file changed meanwhile is left alone (an error says so).
    """
    guard = Guard()
    with walk_to(workspace, path, create=False, guard=guard) as (dir_fd, parts):
        if not parts:
            raise ToolError(f"{path!r} is a directory; give a file path.")
        name = parts[-1]
        try:
            fd = open_step(dir_fd, name, os.O_RDONLY | os.O_NONBLOCK, path)
        except FileNotFoundError:
            raise not_found(path) from None
        try:
            before = guard.check_fd(fd, path)
            _check_writable(before, path)
            if before.st_size > max_bytes:
                raise ToolError(
                    f"Refused: {path!r} is {before.st_size} bytes, more than this run's max_write_bytes "
                    f"({max_bytes}); not edited."
                )
            with os.fdopen(os.dup(fd), "rb") as f:
                old = f.read(max_bytes + 1)
        finally:
            os.close(fd)
        data = edit(old)
        if len(data) > max_bytes:
            raise ToolError(
                f"Refused: the edited content is {len(data)} bytes, more than this run's max_write_bytes "
                f"({max_bytes}); nothing was written."
            )
        tmp = f".smart-agent-edit-{secrets.token_hex(8)}.tmp"
        tfd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600, dir_fd=dir_fd)
        try:
            try:
                os.fchmod(tfd, stat.S_IMODE(before.st_mode))
                view = memoryview(data)
                while view:
                    view = view[os.write(tfd, view):]
                os.fsync(tfd)
            finally:
                os.close(tfd)
            now = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
            if (now.st_dev, now.st_ino, now.st_size, now.st_mtime_ns) != (
                before.st_dev, before.st_ino, before.st_size, before.st_mtime_ns
            ):
                raise ToolError(f"{path!r} changed while it was being edited; not written. Read it again and retry.")
            os.rename(tmp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp, dir_fd=dir_fd)
            raise


def _check_writable(st: os.stat_result, path: str) -> None:
    if stat.S_ISLNK(st.st_mode):
        raise link_error(path)
    if stat.S_ISDIR(st.st_mode):
        raise ToolError(f"{path!r} is a directory; give a file path.")
    if not stat.S_ISREG(st.st_mode):
        raise ToolError(f"Refused: {path!r} is not a regular file (a FIFO, device or socket).")
    if st.st_nlink > 1:
        raise ToolError(
            f"Refused: {path!r} has {st.st_nlink} hard links (it may be a file outside the workspace); not written."
        )


def open_dir(workspace: str | Path, path: str) -> tuple[int, Guard]:
    """Open a workspace folder for listing; returns the descriptor (caller closes it) and the guard."""
    guard = Guard()
    with walk_to(workspace, path, create=False, guard=guard) as (dir_fd, parts):
        if not parts:
            return os.dup(dir_fd), guard
        try:
            fd = open_step(dir_fd, parts[-1], DIR_FLAGS, path)
        except FileNotFoundError:
            raise not_found(path) from None
        except NotADirectoryError:
            raise ToolError(f"{path!r} is a file, not a folder; use read_file to read it.") from None
    try:
        guard.check_fd(fd, path)
    except BaseException:
        os.close(fd)
        raise
    return fd, guard
