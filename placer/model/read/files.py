"""Opening input files: the one way placer reads a path it was given.

Every input path (JobSet manifests, `--cluster` snapshots, `--catalog`, `--add-pool`, `--plan`,
`--kubeconfig`, TLS certificates and keys) is opened here, so every one of them gets the same
guards and the same words:

- **Regular files only.** A FIFO would block the read forever, `/dev/zero` would fill memory, a
  device or `/dev/null` is never what was meant. The path is opened without blocking
  (`O_NONBLOCK`: a FIFO without a writer opens at once) and `fstat`ed; anything but a regular file
  is refused, naming what it is ("is a FIFO, not a regular file").
- **Bounded size**: at most `MAX_INPUT_BYTES`, checked before reading and while reading (a file
  may grow, and `/proc` files report no size).
- **One line for what is wrong**: missing, a directory, permission denied, too large, not UTF-8.

`read_input` returns the bytes, `read_input_text` the text. Loaders that must be handed a path
(the `ssl` module, the Kubernetes client's kubeconfig reader) call `check_input_file` first,
which applies the same checks without keeping the content.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from placer.model.errors import InputError

__all__ = ["MAX_INPUT_BYTES", "check_input_file", "file_kind", "read_input", "read_input_text"]

MAX_INPUT_BYTES = 1 << 30
"""1 GiB: a kubectl JSON snapshot of 50,000 nodes is about 240 MB."""
_CHUNK = 1 << 20
_FLAGS = os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOCTTY


def file_kind(mode: int) -> str:
    """`a FIFO`, `a directory`, `a character device`, ... for messages."""
    for test, name in (
        (stat.S_ISREG, "a regular file"),
        (stat.S_ISDIR, "a directory"),
        (stat.S_ISFIFO, "a FIFO"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISSOCK, "a socket"),
        (stat.S_ISLNK, "a symbolic link"),
    ):
        if test(mode):
            return name
    return "a special file"


def _refuse(path: str | Path, message: str, field: str, code: str) -> InputError:
    return InputError(message, source=str(path), field=field, code=code)


def _open(path: str | Path, field: str, limit: int) -> tuple[int, int]:
    """(descriptor, size) of a regular file of at most `limit` bytes, or the InputError."""
    try:
        found = os.stat(path)  # before opening: opening some devices has effects of its own
        if not stat.S_ISREG(found.st_mode):
            raise _refuse(
                path, f"is {file_kind(found.st_mode)}, not a regular file", field, "not-a-file"
            )
        fd = os.open(path, _FLAGS)
    except FileNotFoundError:
        raise _refuse(path, "no such file or directory", field, "missing-file") from None
    except PermissionError:
        raise _refuse(path, "permission denied", field, "read") from None
    except OSError as e:
        raise _refuse(path, f"cannot open: {e.strerror or e}", field, "read") from None
    opened = os.fstat(fd)  # the file opened, which may have been swapped since the stat
    problem = ""
    if not stat.S_ISREG(opened.st_mode):
        problem = f"is {file_kind(opened.st_mode)}, not a regular file"
    elif opened.st_size > limit:
        problem = f"is {opened.st_size} bytes; at most {limit} are read"
    if problem:
        os.close(fd)
        raise _refuse(path, problem, field, "too-large" if "bytes" in problem else "not-a-file")
    return fd, opened.st_size


def check_input_file(path: str | Path, *, field: str = "", limit: int = MAX_INPUT_BYTES) -> Path:
    """`path`, once it is known to be a readable regular file of at most `limit` bytes."""
    fd, _ = _open(path, field, limit)
    os.close(fd)
    return Path(path)


def read_input(path: str | Path, *, field: str = "", limit: int = MAX_INPUT_BYTES) -> bytes:
    """The bytes of a regular file of at most `limit` bytes; InputError otherwise."""
    fd, _ = _open(path, field, limit)
    chunks: list[bytes] = []
    total = 0
    try:
        while True:
            chunk = os.read(fd, min(_CHUNK, limit + 1 - total) or 1)
            if not chunk:
                break
            total += len(chunk)
            if total > limit:
                raise _refuse(path, f"grew past {limit} bytes while read", field, "too-large")
            chunks.append(chunk)
    except OSError as e:
        raise _refuse(path, f"cannot read: {e.strerror or e}", field, "read") from None
    finally:
        os.close(fd)
    return b"".join(chunks)


def read_input_text(path: str | Path, *, field: str = "", limit: int = MAX_INPUT_BYTES) -> str:
    """The UTF-8 text of a regular file (a byte-order mark is dropped); InputError otherwise."""
    raw = read_input(path, field=field, limit=limit)
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        raise _refuse(
            path, f"not UTF-8 text: {e.reason} at byte {e.start}", field, "read"
        ) from None
