"""The `--emit DIR` directory on disk: written and cleared without ever leaving DIR.

`emit_files` (placer/render/emit.py) decides the files, as relative paths built from validated
names; this module puts them under the directory the user named, and is the only code of placer
that deletes files. What it promises:

- **Nothing outside DIR is written or deleted.** Every path is split into segments, each checked
  (not empty, not `.` or `..`, no `/` or NUL byte); below DIR every directory is opened relative
  to its parent's descriptor with `O_NOFOLLOW`, and every file is created with
  `O_CREAT | O_EXCL | O_NOFOLLOW`, so a symbolic link planted anywhere under DIR (`DIR/jobs`,
  `DIR/jobs/<ns>`, `DIR/jobs.sh`) is never followed, even if it appears while placer runs. DIR
  itself may be a link: the user named it.
- **Only an earlier run's own files are removed**: regular files named in `OWN_FILES` at the top,
  regular `*.yaml` files in real directories under `DIR/jobs/`, and the directories of `jobs/` this
  leaves empty. Links, special files and everything else stay.
- **What cannot be written safely is refused before anything changes** (exit 2, one line): a
  target path held by a link, a directory or a special file; a segment that is not a plain name.
"""

from __future__ import annotations

import contextlib
import os
import stat
from collections.abc import Iterator, Mapping
from pathlib import Path

from placer.model.errors import InputError
from placer.model.messages import echo

__all__ = ["OWN_FILES", "clear_previous", "write_files"]

OWN_FILES = ("jobs.sh", "nodes.yaml", "nodes.sh")
"""What `write_files` writes at the top of its directory, besides the patches under `jobs/`."""
JOBS = "jobs"
_MAX_SEGMENT_BYTES = 255
"""The longest file name Linux file systems take."""

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_NEW_FILE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC


def _refuse(root: Path, message: str) -> InputError:
    return InputError(message, source=str(root), field="--emit", code="emit")


def _segments(root: Path, rel: str) -> list[str]:
    """The parts of a relative path, each a plain file name, or the InputError saying why not."""
    parts = rel.split("/")
    for part in parts:
        problem = ""
        if part in ("", ".", ".."):
            problem = "an empty, '.' or '..' segment"
        elif "\0" in part or "\\" in part:
            problem = "a NUL byte or backslash"
        elif len(part.encode("utf-8", "surrogateescape")) > _MAX_SEGMENT_BYTES:
            problem = f"a segment longer than {_MAX_SEGMENT_BYTES} bytes"
        if problem:
            raise _refuse(root, f"refusing to write {echo(rel)}: {problem}")
    return parts


def _kind(mode: int) -> str:
    if stat.S_ISLNK(mode):
        return "a symbolic link"
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISREG(mode):
        return "a regular file"
    return "a special file"


def _lstat(name: str, dir_fd: int) -> os.stat_result | None:
    try:
        return os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except FileNotFoundError:
        return None


@contextlib.contextmanager
def _opened_dir(
    name: str, dir_fd: int | None, *, create: bool, root: Path, shown: str
) -> Iterator[int]:
    """A directory below `dir_fd` (or `root` itself when `dir_fd` is None), never through a link."""
    try:
        if dir_fd is None:
            if create:
                root.mkdir(parents=True, exist_ok=True)
            fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        else:
            if create:
                with contextlib.suppress(FileExistsError):
                    os.mkdir(name, 0o755, dir_fd=dir_fd)
            fd = os.open(name, _DIR_FLAGS, dir_fd=dir_fd)
    except OSError as e:
        found = _lstat(name, dir_fd) if dir_fd is not None else None
        what = f"it is {_kind(found.st_mode)}" if found is not None else e.strerror or str(e)
        raise _refuse(root, f"cannot use {shown} as a directory: {what}") from e
    try:
        yield fd
    finally:
        os.close(fd)


def _check_targets(root: Path, root_fd: int, paths: list[list[str]]) -> None:
    """Refuse, before anything changes, a target held by something that is not ours to replace:
    a directory on the way that is a link or a file, a file that is a link, directory or device."""
    for parts in paths:
        prefix: list[str] = []
        for i, part in enumerate(parts):
            prefix.append(part)
            found = _lstat("/".join(prefix), root_fd)
            if found is None:
                break
            last = i == len(parts) - 1
            ok = stat.S_ISREG(found.st_mode) if last else stat.S_ISDIR(found.st_mode)
            if not ok:
                shown = "/".join(prefix)
                raise _refuse(
                    root, f"{shown} is {_kind(found.st_mode)}; refusing to write through it"
                )


def clear_previous(root: Path) -> list[Path]:
    """Remove what an earlier `--emit` into `root` wrote (and only that: regular `jobs/<ns>/*.yaml`
    files, the scripts and nodes.yaml), so no stale patch from another plan is left beside the new
    ones. Links are never followed nor removed."""
    removed: list[Path] = []
    if not root.is_dir():
        return removed
    with _opened_dir("", None, create=False, root=root, shown=str(root)) as root_fd:
        for name in OWN_FILES:
            if _remove_regular(name, root_fd):
                removed.append(root / name)
        found = _lstat(JOBS, root_fd)
        if found is None or not stat.S_ISDIR(found.st_mode):
            return removed
        with _opened_dir(JOBS, root_fd, create=False, root=root, shown=JOBS) as jobs_fd:
            for ns in sorted(_entries(jobs_fd)):
                found = _lstat(ns, jobs_fd)
                if found is None or not stat.S_ISDIR(found.st_mode):
                    continue
                with _opened_dir(ns, jobs_fd, create=False, root=root, shown=f"{JOBS}/{ns}") as fd:
                    for name in sorted(_entries(fd)):
                        if name.endswith(".yaml") and _remove_regular(name, fd):
                            removed.append(root / JOBS / ns / name)
                    empty = not _entries(fd)
                if empty:
                    with contextlib.suppress(OSError):
                        os.rmdir(ns, dir_fd=jobs_fd)
            empty = not _entries(jobs_fd)
        if empty:
            with contextlib.suppress(OSError):
                os.rmdir(JOBS, dir_fd=root_fd)
    return removed


def _entries(dir_fd: int) -> list[str]:
    with os.scandir(dir_fd) as it:
        return [entry.name for entry in it]


def _remove_regular(name: str, dir_fd: int) -> bool:
    found = _lstat(name, dir_fd)
    if found is None or not stat.S_ISREG(found.st_mode):
        return False
    os.unlink(name, dir_fd=dir_fd)
    return True


def write_files(root: Path, files: Mapping[str, str]) -> list[Path]:
    """Write `emit_files` output under `root`, after clearing an earlier run's files; scripts
    become executable. Returns the paths written. An unsafe target is an InputError before
    anything is removed; a failing disk is an OSError (the caller names it)."""
    rels = sorted(files)
    paths = [_segments(root, rel) for rel in rels]
    with _opened_dir("", None, create=True, root=root, shown=str(root)) as root_fd:
        _check_targets(root, root_fd, paths)
        clear_previous(root)
        written: list[Path] = []
        for rel, parts in zip(rels, paths, strict=True):
            _write_one(root, root_fd, parts, files[rel])
            written.append(root.joinpath(*parts))
    return written


def _write_one(root: Path, root_fd: int, parts: list[str], content: str) -> None:
    with contextlib.ExitStack() as stack:
        fd = root_fd
        for i, part in enumerate(parts[:-1]):
            shown = "/".join(parts[: i + 1])
            fd = stack.enter_context(_opened_dir(part, fd, create=True, root=root, shown=shown))
        name = parts[-1]
        try:
            out = os.open(name, _NEW_FILE, 0o644, dir_fd=fd)
        except FileExistsError as e:
            raise _refuse(
                root, f"{'/'.join(parts)} appeared while writing; not replacing it"
            ) from e
        with os.fdopen(out, "w", encoding="utf-8") as handle:
            handle.write(content)
            if name.endswith(".sh"):
                os.fchmod(handle.fileno(), 0o755)
