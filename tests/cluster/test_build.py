"""Which module builds which upstream program, and the cache directory each choice is kept in
(no Go is run: these read the pinned modules only)."""

from __future__ import annotations

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


def test_a_chosen_release_builds_only_the_kubernetes_programs_into_its_own_directory(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("PLACER_KUBERNETES", raising=False)
    default_key, default_versions = build.cache_key(), build.module_versions()
    monkeypatch.setenv("PLACER_KUBERNETES", "v1.37")
    chosen = build.KUBERNETES_DIR / "v1.37"
    assert {build.module_dir(p) for p in KUBE} == {chosen}
    assert {build.module_dir(p) for p in OTHERS} == {build.MODULE_DIR}
    versions = build.module_versions()
    assert versions[build.KUBERNETES].startswith("v1.37.")
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
