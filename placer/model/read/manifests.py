"""Reading manifest files: what `placer plan`, the JobSet parser and the snapshot loader share.

Files or directories (recursively, `*.yaml`/`*.yml`/`*.json`, sorted), multi-document YAML and
`kind: List` wrappers, all flattened into `(source, object)` pairs. Files are opened by
`placer.model.read.files` (regular files only, bounded size) and parsed by
`placer.model.read.loading` (bounded nesting, alias expansion and numbers; syntax errors with the
line number); pydantic errors become `InputError`s with a Kubernetes-style field path
(`spec.replicatedJobs[0].replicas`): a user never sees a traceback.

`placer plan` reads hundreds of JobSet files: YAML goes through libyaml when PyYAML has it. (A
kubectl JSON snapshot is decoded in one call by `placer.model.kube.objects`; this reader is its
fallback for other files, and names what is wrong in them.)
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

from placer.model.errors import InputError
from placer.model.messages import echo
from placer.model.read.files import check_input_file, read_input_text
from placer.model.read.loading import load_json, load_yaml_documents

__all__ = [
    "MANIFEST_SUFFIXES",
    "ClosedSchema",
    "Document",
    "describe_object",
    "expand_paths",
    "object_key",
    "read_documents",
    "validation_error",
]

MANIFEST_SUFFIXES = (".yaml", ".yml", ".json")


class ClosedSchema(BaseModel):
    """A schema of placer's own file formats (cluster description, node-pool catalogue): an
    unknown field is an error, not ignored (a typo must not silently change a plan), and the
    parsed value is frozen."""

    model_config = ConfigDict(extra="forbid", frozen=True)


Document = tuple[str, Mapping[str, Any]]
"""(source, object): `source` is the file name; List items are yielded one by one."""


def expand_paths(paths: Sequence[str | Path]) -> list[Path]:
    """Files as given; directories recursively, manifest suffixes only, sorted for determinism.

    A directory's entries that are not regular files (FIFOs, devices, sockets, links to them)
    are not manifests and are passed over; a path given by name must be a regular file or a
    directory, or the one line says what it is."""
    files: list[Path] = []
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            files.extend(
                sorted(p for p in path.rglob("*") if p.suffix in MANIFEST_SUFFIXES and p.is_file())
            )
        else:
            files.append(check_input_file(path))
    return files


def _load_text(path: Path) -> list[Any]:
    source = str(path)
    text = read_input_text(path)
    if path.suffix == ".json":
        return [load_json(text, source=source)]
    return load_yaml_documents(text, source=source)


def read_documents(paths: Sequence[str | Path]) -> Iterator[Document]:
    """Every object in the given files, Lists flattened, in file order. Non-mappings are errors."""
    for path in expand_paths(paths):
        for n, doc in enumerate(_load_text(path)):
            source = str(path)
            if not isinstance(doc, Mapping):
                raise InputError(
                    f"document {n + 1} is a {type(doc).__name__}, not an object",
                    source=source,
                    code="not-an-object",
                )
            if str(doc.get("kind", "")).endswith("List") and "items" in doc:
                items = doc.get("items") or []
                if not isinstance(items, list):
                    raise InputError("must be a list", source=source, field="items", code="type")
                for i, item in enumerate(items):
                    if not isinstance(item, Mapping):
                        raise InputError(
                            "must be an object", source=source, field=f"items[{i}]", code="type"
                        )
                    yield source, item
            else:
                yield source, doc


_CLUSTER_SCOPED = frozenset({"Node", "PriorityClass", "Namespace"})


def object_key(obj: Mapping[str, Any]) -> str:
    """`namespace/name` (or `Kind/name` when cluster-scoped) for error messages; never raises."""
    meta = obj.get("metadata")
    kind = _short(obj.get("kind") or "object")
    if not isinstance(meta, Mapping):
        return kind
    name = _short(meta.get("name", "?"))
    if kind in _CLUSTER_SCOPED:
        return f"{kind}/{name}"
    return f"{_short(meta.get('namespace') or 'default')}/{name}"


def _short(part: object) -> str:
    """A part of an object key as messages show it: escaped, and cut if long (names are checked
    later; the message saying what is wrong with one must still fit on a line)."""
    return echo(part, limit=80, quote=False) if isinstance(part, str) else echo(part, limit=80)


def describe_object(obj: Mapping[str, Any]) -> str:
    """`ConfigMap default/cfg`, `Node/n1`, or the bare kind when the object has no name: for
    "skipping ..." warnings, which would otherwise say `NodePoolCatalog NodePoolCatalog`."""
    kind = str(obj.get("kind") or "object without kind")
    key = object_key(obj)
    if key in (kind, "object") or key.startswith(f"{kind}/"):
        return key if key.startswith(f"{kind}/") else kind
    return f"{kind} {key}"


def _loc(loc: Sequence[int | str]) -> str:
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else str(part)
    return out


def validation_error(e: ValidationError, *, source: str, obj: str, prefix: str = "") -> InputError:
    """The first pydantic error as an InputError with a Kubernetes-style field path."""
    err = e.errors()[0]
    field = _loc(err["loc"])
    field = f"{prefix}.{field}" if prefix and field else (prefix or field)
    more = f" (and {len(e.errors()) - 1} more)" if len(e.errors()) > 1 else ""
    return InputError(f"{err['msg']}{more}", source=source, obj=obj, field=field, code="schema")
