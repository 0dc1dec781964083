"""The one helper that opens input files (issue 22, item 2): regular files only, bounded size,
one line saying what is wrong."""

from __future__ import annotations

import os
import socket
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from placer.model.errors import InputError
from placer.model.read.files import check_input_file, read_input, read_input_text


def test_reads_a_regular_file(tmp_path: Path) -> None:
    path = tmp_path / "a.yaml"
    path.write_bytes(b"\xef\xbb\xbfkind: x\n")
    assert read_input(path) == b"\xef\xbb\xbfkind: x\n"
    assert read_input_text(path) == "kind: x\n"
    assert check_input_file(path) == path


@pytest.mark.parametrize(
    ("make", "message"),
    [
        pytest.param(lambda p: os.mkfifo(p), "is a FIFO, not a regular file", id="fifo"),
        pytest.param(lambda p: p.mkdir(), "is a directory, not a regular file", id="directory"),
        pytest.param(
            lambda p: p.symlink_to("/dev/zero"), "is a character device, not a regular file",
            id="link-to-device",
        ),
        pytest.param(lambda p: None, "no such file or directory", id="missing"),
        pytest.param(
            lambda p: p.write_bytes(b"x" * 11), "is 11 bytes; at most 10 are read", id="big"
        ),
        pytest.param(
            lambda p: p.write_bytes(b"\xff\xfe"), "not UTF-8 text: invalid start byte at byte 0",
            id="not-utf8",
        ),
    ],
)  # fmt: skip
def test_what_is_refused(tmp_path: Path, make: Callable[[Path], object], message: str) -> None:
    path = tmp_path / "input"
    make(path)
    with pytest.raises(InputError) as refused:
        read_input_text(path, field="--cluster", limit=10)
    assert str(refused.value) == f"{path}: --cluster: {message}"


def test_a_socket_is_named(tmp_path: Path) -> None:
    path = tmp_path / "s"
    with socket.socket(socket.AF_UNIX) as server:
        server.bind(str(path))
        with pytest.raises(InputError) as refused:
            read_input(path, field="--cluster")
    assert str(refused.value) == f"{path}: --cluster: is a socket, not a regular file"
    assert refused.value.code == "not-a-file"


def test_a_missing_file_and_a_symlink_loop(tmp_path: Path) -> None:
    with pytest.raises(InputError) as missing:
        read_input(tmp_path / "nothing")
    assert missing.value.code == "missing-file"
    loop = tmp_path / "loop"
    loop.symlink_to(loop)
    with pytest.raises(InputError) as looping:
        read_input(loop, field="--plan")
    assert str(looping.value) == (f"{loop}: --plan: cannot open: Too many levels of symbolic links")
    assert looping.value.code == "read"


def test_permission_denied(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """(Tests run as root, who may open anything: the refusal is simulated.)"""
    path = tmp_path / "secret.yaml"
    path.write_text("a: 1\n")

    def refuse(*_: object) -> int:
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(os, "open", refuse)
    with pytest.raises(InputError) as refused:
        read_input(path)
    assert (str(refused.value), refused.value.code) == (f"{path}: permission denied", "read")


def test_the_default_limit_is_one_gib(tmp_path: Path) -> None:
    """A sparse file: its size is what counts, and nothing is read to find it out."""
    path = tmp_path / "huge.json"
    with path.open("wb") as f:
        f.truncate(1 << 30)
    assert check_input_file(path) == path
    with path.open("wb") as f:
        f.truncate((1 << 30) + 1)
    with pytest.raises(InputError) as refused:
        check_input_file(path, field="--cluster")
    message = "is 1073741825 bytes; at most 1073741824 are read"
    assert str(refused.value) == f"{path}: --cluster: {message}"
    assert refused.value.code == "too-large"


@pytest.mark.parametrize("special", ["fifo", "/dev/null"])
def test_special_files_are_never_opened(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, special: str
) -> None:
    """Opening a device can have effects of its own (a tape rewinds, a watchdog arms): the
    kind is known from `stat` before anything is opened."""
    path = Path(special)
    if special == "fifo":
        path = tmp_path / "fifo"
        os.mkfifo(path)
    opened: list[object] = []
    real_open = os.open

    def spy(name: object, *args: Any, **kwargs: Any) -> int:
        opened.append(name)
        return real_open(name, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(os, "open", spy)
    with pytest.raises(InputError) as refused:
        read_input(path)
    assert refused.value.code == "not-a-file"
    assert opened == []


def test_a_fifo_swapped_in_after_the_check_is_refused_without_blocking(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Between `stat` and `open` the path may become a FIFO: it is opened without blocking
    (no writer needed) and refused by what was opened."""
    fifo = tmp_path / "swapped"
    os.mkfifo(fifo)
    was_regular = os.stat(__file__)
    real_stat = os.stat

    def stat(path: Any, *args: Any, **kwargs: Any) -> os.stat_result:
        return was_regular if str(path) == str(fifo) else real_stat(path, *args, **kwargs)

    monkeypatch.setattr(os, "stat", stat)
    errors: list[InputError] = []

    def read() -> None:
        try:
            read_input(fifo)
        except InputError as e:
            errors.append(e)

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    reader.join(5)
    if reader.is_alive():
        os.close(os.open(fifo, os.O_RDWR | os.O_NONBLOCK))  # a writer lets the open return
        reader.join(5)
        pytest.fail("opening the FIFO blocked until a writer came")
    assert [str(e) for e in errors] == [f"{fifo}: is a FIFO, not a regular file"]


def test_a_file_of_exactly_the_limit_is_read(tmp_path: Path) -> None:
    path = tmp_path / "ten"
    path.write_bytes(b"0123456789")
    assert read_input(path, limit=10) == b"0123456789"


def test_a_file_that_reports_no_size_is_cut_while_read() -> None:
    """`/proc` files say they are empty and are not: the limit holds while reading."""
    with pytest.raises(InputError) as refused:
        read_input("/proc/self/status", field="--cluster", limit=10)
    assert str(refused.value) == "/proc/self/status: --cluster: grew past 10 bytes while read"
    assert refused.value.code == "too-large"


def test_a_read_error_is_one_line() -> None:
    with pytest.raises(InputError) as refused:
        read_input("/proc/self/mem")
    assert str(refused.value) == "/proc/self/mem: cannot read: Input/output error"
    assert refused.value.code == "read"


def test_refused_files_are_closed(tmp_path: Path) -> None:
    """A thousand refused files must not leave a thousand descriptors open."""
    path = tmp_path / "big"
    path.write_bytes(b"x" * 11)
    before = len(os.listdir("/proc/self/fd"))
    for _ in range(20):
        with pytest.raises(InputError):
            read_input(path, limit=10)
        with pytest.raises(InputError):
            read_input("/proc/self/status", limit=10)
    assert len(os.listdir("/proc/self/fd")) == before
