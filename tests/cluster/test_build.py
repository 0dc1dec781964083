"""Which module builds which upstream program, the cache directory each choice is kept in, and
the environment the go command gets (no Go is run: these read the pinned modules only)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from tests.cluster import build

KUBE = [p for p in build.PROGRAMS if p.module == build.KUBERNETES]
OTHERS = [p for p in build.PROGRAMS if p.module != build.KUBERNETES]


def test_unset_every_program_comes_from_the_module_that_pins_them_all(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("PLACER_KUBERNETES", raising=False)
    assert {build.module_dir(p) for p in build.PROGRAMS} == {build.MODULE_DIR}
    versions = build.module_versions()
    assert build.cache_key().startswith(f"k8s-{versions[build.KUBERNETES]}_")


RELEASES = sorted(p.name for p in build.KUBERNETES_DIR.iterdir() if (p / "go.mod").is_file())


def test_the_releases_offered_include_the_next_two() -> None:
    assert {"v1.37", "v1.38"} <= set(RELEASES)


@pytest.mark.parametrize("release", RELEASES)
def test_a_chosen_release_builds_only_the_kubernetes_programs_into_its_own_directory(
    monkeypatch: pytest.MonkeyPatch, release: str
) -> None:
    monkeypatch.delenv("PLACER_KUBERNETES", raising=False)
    default_key, default_versions = build.cache_key(), build.module_versions()
    monkeypatch.setenv("PLACER_KUBERNETES", release)
    chosen = build.KUBERNETES_DIR / release
    assert {build.module_dir(p) for p in KUBE} == {chosen}
    assert {build.module_dir(p) for p in OTHERS} == {build.MODULE_DIR}
    versions = build.module_versions()
    assert versions[build.KUBERNETES].startswith(f"{release}.")
    assert {m: v for m, v in versions.items() if m != build.KUBERNETES} == {
        m: v for m, v in default_versions.items() if m != build.KUBERNETES
    }
    assert build.cache_key().startswith(f"k8s-{versions[build.KUBERNETES]}_")
    assert build.cache_key() != default_key


def test_an_unknown_release_is_refused_naming_the_known_ones(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("PLACER_KUBERNETES", "v9.9")
    with pytest.raises(SystemExit, match=r"v9\.9.*known: v1\.37"):
        build.binary_dir()


class _Stop(Exception):
    """Raised by the stand-in for `go build`, once it has seen the environment it was given."""


@pytest.mark.parametrize(
    ("set_by_user", "expected"),
    [pytest.param(None, "auto", id="unset"), pytest.param("local", "local", id="user-set")],
)
def test_the_go_command_may_fetch_the_toolchain_a_module_asks_for_unless_the_user_says(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, set_by_user: str | None, expected: str
) -> None:
    """v1.38's go line asks for Go 1.27: with this machine's `GOTOOLCHAIN=local` (Go's own
    setting) the go command would refuse it, so the build passes `auto` unless told otherwise."""
    if set_by_user is None:
        monkeypatch.delenv("GOTOOLCHAIN", raising=False)
    else:
        monkeypatch.setenv("GOTOOLCHAIN", set_by_user)
    seen: dict[str, str] = {}

    def fake_run(command: list[str], *, cwd: Path, env: dict[str, str], check: bool) -> None:
        seen.update(env)
        raise _Stop

    monkeypatch.setattr(subprocess, "run", fake_run)
    monkeypatch.setattr(shutil, "which", lambda name: f"/usr/local/go/bin/{name}")
    with pytest.raises(_Stop):
        build.build(tmp_path / "bin", list(build.PROGRAMS[:1]))
    assert seen["GOTOOLCHAIN"] == expected
    assert seen["CGO_ENABLED"] == "0"
