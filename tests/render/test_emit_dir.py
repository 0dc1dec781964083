"""`--emit DIR` stays inside DIR (issue 22, item 1): names never become paths unchecked, links
under DIR are never followed, and what cannot be written safely is refused before anything
changes."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from placer.model.errors import InputError
from placer.model.plan import JobSetOutcome, Plan
from placer.render.emit import emit_files, write_files
from placer.render.emit_dir import _write_one, clear_previous
from tests.render.plans import job, sample_plan
from tests.strategies import cluster, hostile_names, pool


def _plan(namespace: str, name: str, job_name: str | None = None) -> Plan:
    placed = job(name, 0, "pool0")
    if job_name is not None:
        placed = placed.model_copy(update={"name": job_name})
    outcome = JobSetOutcome(namespace=namespace, name=name, status="placed", jobs=[placed])
    return sample_plan().model_copy(update={"jobsets": [outcome]})


def _files_under(top: Path) -> dict[str, bytes]:
    """Every file below `top` (links listed as links), relative path -> content."""
    found: dict[str, bytes] = {}
    for dirpath, dirnames, filenames in os.walk(top):
        for name in [*filenames, *(d for d in dirnames if Path(dirpath, d).is_symlink())]:
            path = Path(dirpath, name)
            rel = path.relative_to(top).as_posix()
            found[rel] = (
                b"-> " + os.readlink(path).encode() if path.is_symlink() else path.read_bytes()
            )
    return found


SNAPSHOT = cluster(pool("pool0", 2))


@pytest.mark.parametrize(
    ("namespace", "job_name", "what"),
    [
        pytest.param("../../victim", "x-workers-0", "namespace", id="namespace-climbs"),
        pytest.param("a/b", "x-workers-0", "namespace", id="namespace-nests"),
        pytest.param("", "x-workers-0", "namespace", id="namespace-empty"),
        pytest.param("default", "x/../../../victim2/pwn-0", "child Job name", id="name-climbs"),
        pytest.param("default", "..", "child Job name", id="name-dotdot"),
        pytest.param("default", "x\nrm -rf ~", "child Job name", id="name-newline"),
    ],
)
def test_names_that_are_not_kubernetes_names_never_become_paths(
    tmp_path: Path, namespace: str, job_name: str, what: str
) -> None:
    with pytest.raises(InputError) as refused:
        emit_files(_plan(namespace, "x", job_name), [], SNAPSHOT)
    assert refused.value.field == "--emit"
    assert f"cannot name a patch file after the {what}" in str(refused.value)
    assert "\n" not in str(refused.value)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(namespace=hostile_names(), name=hostile_names(), job_name=hostile_names())
def test_emitted_paths_stay_inside_dir_whatever_the_names(
    namespace: str, name: str, job_name: str
) -> None:
    with tempfile.TemporaryDirectory() as top_text:
        top = Path(top_text)
        (top / "sibling").mkdir()
        (top / "sibling" / "keep.yaml").write_text("theirs")
        root = top / "out"
        try:
            files = emit_files(_plan(namespace, name, job_name), [], SNAPSHOT)
            written = write_files(root, files)
        except InputError:
            written = []
        for path in written:
            assert path.resolve().is_relative_to(root.resolve())
        outside = {k: v for k, v in _files_under(top).items() if not k.startswith("out/")}
        assert outside == {"sibling/keep.yaml": b"theirs"}


def test_a_linked_namespace_directory_is_not_emptied(tmp_path: Path) -> None:
    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "precious.yaml").write_text("theirs")
    root = tmp_path / "out"
    (root / "jobs").mkdir(parents=True)
    (root / "jobs" / "team-z").symlink_to(victim)
    (root / "jobs" / "team-y").mkdir()
    (root / "jobs" / "team-y" / "old-0.yaml").write_text("stale, ours")
    write_files(root, emit_files(_plan("team-a", "x"), [], SNAPSHOT))
    assert (victim / "precious.yaml").read_text() == "theirs"
    assert (root / "jobs" / "team-z").is_symlink(), "a link is not ours to remove"
    assert not (root / "jobs" / "team-y").exists(), "our own stale patch directory is cleared"
    assert (root / "jobs" / "team-a" / "x-workers-0.yaml").is_file()


@pytest.mark.parametrize(
    "planted",
    [
        pytest.param("jobs", id="jobs-dir-is-a-link"),
        pytest.param("jobs/team-a", id="namespace-dir-is-a-link"),
        pytest.param("jobs/team-a/x-workers-0.yaml", id="patch-file-is-a-link"),
        pytest.param("jobs.sh", id="script-is-a-link"),
    ],
)
def test_a_link_on_the_way_is_refused_before_anything_changes(tmp_path: Path, planted: str) -> None:
    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "x-workers-0.yaml").write_text("theirs")
    root = tmp_path / "out"
    root.mkdir()
    (root / "nodes.sh").write_text("stale")
    if planted != "jobs":
        (root / "jobs" / "team-y").mkdir(parents=True)
        (root / "jobs" / "team-y" / "old-0.yaml").write_text("stale")
    link = root / planted
    link.parent.mkdir(parents=True, exist_ok=True)
    link.symlink_to(
        victim if not planted.endswith((".yaml", ".sh")) else victim / "x-workers-0.yaml"
    )
    before = _files_under(tmp_path)
    with pytest.raises(InputError) as refused:
        write_files(root, emit_files(_plan("team-a", "x"), [], SNAPSHOT))
    assert "symbolic link" in str(refused.value)
    assert _files_under(tmp_path) == before, "refused before clearing or writing anything"


def test_a_fifo_where_a_file_goes_is_refused_without_blocking(tmp_path: Path) -> None:
    root = tmp_path / "out"
    root.mkdir()
    os.mkfifo(root / "jobs.sh")
    with pytest.raises(InputError) as refused:
        write_files(root, emit_files(_plan("team-a", "x"), [], SNAPSHOT))
    assert str(refused.value) == (
        f"{root}: --emit: jobs.sh is a special file; refusing to write through it"
    )


@given(st.sampled_from(["", ".", "..", "a//b", "a/../b", "/etc/passwd", "a\\b", "a\0b"]))
def test_write_files_refuses_paths_that_are_not_plain_segments(rel: str) -> None:
    with tempfile.TemporaryDirectory() as top:
        with pytest.raises(InputError, match="refusing to write") as refused:
            write_files(Path(top) / "out", {rel: "x"})
        # refused by the segment rule itself, not only by a later layer's check of the disk
        assert "segment" in str(refused.value) or "NUL byte or backslash" in str(refused.value)
        assert not (Path(top) / "out").exists() or not any((Path(top) / "out").iterdir())


def test_a_segment_is_measured_in_bytes_up_to_255(tmp_path: Path) -> None:
    """Linux takes file names of at most 255 bytes: 127 two-byte letters and a one-byte one fit,
    128 do not, though they are 128 characters."""
    root = tmp_path / "out"
    fits = "é" * 127 + "a"
    assert write_files(root, {fits: "x"}) == [root / fits]
    for too_long in ("é" * 128, "a" * 256):
        with pytest.raises(InputError, match="longer than 255 bytes"):
            write_files(root, {too_long: "x"})


def test_a_directory_linked_in_while_writing_is_not_followed(tmp_path: Path) -> None:
    """`write_files` checks the targets first; a link planted after that check (a race) must
    still not be followed: directories are opened with O_NOFOLLOW."""
    root, elsewhere = tmp_path / "out", tmp_path / "elsewhere"
    root.mkdir()
    elsewhere.mkdir()
    (root / "jobs").symlink_to(elsewhere, target_is_directory=True)
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
    try:
        with pytest.raises(InputError, match="cannot use jobs as a directory"):
            _write_one(root, fd, ["jobs", "ns", "a.yaml"], "x")
    finally:
        os.close(fd)
    assert not any(elsewhere.iterdir())


def test_a_file_that_appears_while_writing_is_not_replaced(tmp_path: Path) -> None:
    root = tmp_path / "out"
    root.mkdir()
    (root / "jobs.sh").write_text("theirs")
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
    try:
        with pytest.raises(InputError, match="appeared while writing"):
            _write_one(root, fd, ["jobs.sh"], "ours")
    finally:
        os.close(fd)
    assert (root / "jobs.sh").read_text() == "theirs"


def test_clearing_removes_only_regular_yaml_files_under_jobs(tmp_path: Path) -> None:
    """An earlier run wrote `jobs/<ns>/*.yaml`; a README, a FIFO named like a patch and a
    user's regular file named `jobs` at the top are not its files."""
    root = tmp_path / "out"
    ns = root / "jobs" / "team"
    ns.mkdir(parents=True)
    (ns / "a.yaml").write_text("old patch")
    (ns / "README").write_text("mine")
    os.mkfifo(ns / "b.yaml")
    assert clear_previous(root) == [ns / "a.yaml"]
    assert sorted(p.name for p in ns.iterdir()) == ["README", "b.yaml"]

    other = tmp_path / "other"
    other.mkdir()
    (other / "jobs").write_text("a user's file")
    assert write_files(other, {"nodes.yaml": "x"}) == [other / "nodes.yaml"]
    assert (other / "jobs").read_text() == "a user's file"
