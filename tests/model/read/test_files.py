"""The one helper that opens input files (issue 22, item 2): regular files only, bounded size,
one line saying what is wrong."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

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
