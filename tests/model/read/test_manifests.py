"""Manifest reading: libyaml and the pure-Python loader agree; errors keep the pure loader's
words."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from placer.model.errors import InputError
from placer.model.read import loading, manifests
from placer.model.read.manifests import read_documents

MANIFESTS = [
    *sorted((Path(__file__).resolve().parents[2] / "data").rglob("*.yaml")),
    *sorted((Path(__file__).resolve().parents[3] / "examples").rglob("*.yaml")),
]

TRICKY = """\
a: 2026-01-01T08:00:00Z
b: '0755'
c: 0755
d: 1e3
e: yes
f: ~
g: !!str 12
h: [1, 2.5, -3, .inf]
---
---
kind: List
items: []
"""


def pure(text: str) -> list[object]:
    return [d for d in yaml.load_all(text, Loader=loading._Loader) if d is not None]


@pytest.mark.skipif(loading._FastLoader is None, reason="PyYAML built without libyaml")
@pytest.mark.parametrize("path", MANIFESTS, ids=lambda p: p.name)
def test_libyaml_reads_what_the_pure_loader_reads(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    assert manifests._load_text(path) == pure(text)


def test_timestamps_stay_strings_and_types_match(tmp_path: Path) -> None:
    path = tmp_path / "t.yaml"
    path.write_text(TRICKY)
    docs = manifests._load_text(path)
    assert docs == pure(TRICKY)
    assert docs[0]["a"] == "2026-01-01T08:00:00Z"
    assert (docs[0]["b"], docs[0]["c"], docs[0]["e"], docs[0]["g"]) == ("0755", 493, True, "12")


@pytest.mark.parametrize(
    "text",
    [
        pytest.param("a: [1, 2\n", id="unclosed-flow"),
        pytest.param("a: b\n c: d\n", id="bad-indent"),
        pytest.param("a: 1\na: *nope\n", id="unknown-alias"),
        pytest.param("- !!python/object:os.system x\n", id="unsafe-tag"),
    ],
)
def test_yaml_errors_keep_the_pure_loaders_message(tmp_path: Path, text: str) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(text)
    with pytest.raises(yaml.YAMLError) as expected:
        pure(text)
    mark = getattr(expected.value, "problem_mark", None)
    with pytest.raises(InputError) as e:
        list(read_documents([path]))
    assert e.value.code == "syntax" and e.value.source == str(path)
    assert e.value.message.endswith(str(getattr(expected.value, "problem", None)))
    if mark is not None:
        assert f"at line {mark.line + 1} column {mark.column + 1}" in e.value.message
