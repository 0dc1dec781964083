"""Manifest reading: libyaml and the pure-Python loader agree; errors keep the pure loader's
words."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import yaml
from pydantic import ValidationError

from placer.model.errors import InputError
from placer.model.read import loading, manifests
from placer.model.read.manifests import (
    ClosedSchema,
    describe_object,
    expand_paths,
    object_key,
    read_documents,
    validation_error,
)

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


def test_a_directory_passes_over_what_is_not_a_regular_file(tmp_path: Path) -> None:
    """README: directories are read recursively, their special files passed over (a FIFO, a
    link to a device, a directory named like a manifest), however they are named."""
    (tmp_path / "a.yaml").write_text("kind: A\n")
    os.mkfifo(tmp_path / "fifo.yaml")
    (tmp_path / "zero.json").symlink_to("/dev/zero")
    (tmp_path / "sub.yml").mkdir()
    (tmp_path / "sub.yml" / "b.yml").write_text("kind: B\n")
    (tmp_path / "notes.txt").write_text("kind: C\n")
    assert expand_paths([tmp_path]) == [tmp_path / "a.yaml", tmp_path / "sub.yml" / "b.yml"]
    assert [doc["kind"] for _, doc in read_documents([tmp_path])] == ["A", "B"]


def test_closed_schemas_refuse_unknown_fields_and_stay_frozen() -> None:
    class Pool(ClosedSchema):
        name: str

    with pytest.raises(ValidationError):
        Pool.model_validate({"name": "p", "nmae": "typo"})
    pool = Pool(name="p")
    with pytest.raises(ValidationError):
        pool.name = "q"


@pytest.mark.parametrize(
    ("text", "field", "message"),
    [
        pytest.param("kind: x\n---\n- a\n", "", "document 2 is a list, not an object", id="doc"),
        pytest.param("kind: List\nitems: 5\n", "items", "must be a list", id="items"),
        pytest.param("kind: List\nitems: {a: 1}\n", "items", "must be a list", id="items-map"),
        pytest.param(
            "kind: NodeList\nitems: [{kind: Node}, 5]\n", "items[1]", "must be an object",
            id="item",
        ),
    ],
)  # fmt: skip
def test_what_is_not_an_object(tmp_path: Path, text: str, field: str, message: str) -> None:
    path = tmp_path / "f.yaml"
    path.write_text(text)
    with pytest.raises(InputError) as refused:
        list(read_documents([path]))
    e = refused.value
    assert (e.source, e.field, e.message) == (str(path), field, message)


@pytest.mark.parametrize(
    ("obj", "key", "described"),
    [
        pytest.param(
            {"kind": "JobSet", "metadata": {"name": "x"}}, "default/x", "JobSet default/x",
        ),
        pytest.param({"kind": "Node", "metadata": {"name": "n"}}, "Node/n", "Node/n"),
        pytest.param(
            {"kind": "PriorityClass", "metadata": {"name": "high", "namespace": "ns"}},
            "PriorityClass/high", "PriorityClass/high",
        ),
        pytest.param({"kind": "NodePoolCatalog"}, "NodePoolCatalog", "NodePoolCatalog"),
        pytest.param({}, "object", "object without kind"),
        pytest.param(
            {"kind": "JobSet", "metadata": {"name": "n" * 300, "namespace": "a\nb"}},
            f"a\\nb/{'n' * 80}... (300 characters)", f"JobSet a\\nb/{'n' * 80}... (300 characters)",
        ),
    ],
)  # fmt: skip
def test_object_keys(obj: dict[str, object], key: str, described: str) -> None:
    """Cluster-scoped kinds have no namespace; names are cut and escaped for one line."""
    assert (object_key(obj), describe_object(obj)) == (key, described)


def test_validation_errors_have_kubernetes_field_paths() -> None:
    class Job(ClosedSchema):
        replicas: list[int]
        name: str

    with pytest.raises(ValidationError) as invalid:
        Job.model_validate({"replicas": [1, "x"], "name": 5})
    e = validation_error(invalid.value, source="f.yaml", obj="ns/x", prefix="spec")
    assert (e.field, e.code) == ("spec.replicas[1]", "schema")
    assert e.message.endswith(" (and 1 more)")
