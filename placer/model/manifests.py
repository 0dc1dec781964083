"""Reading manifest files: what `placer plan`, the JobSet parser and the snapshot loader share.

Files or directories (recursively, `*.yaml`/`*.yml`/`*.json`, sorted), multi-document YAML and
`kind: List` wrappers, all flattened into `(source, object)` pairs. YAML and JSON syntax errors
become `InputError`s with the line number; pydantic errors become `InputError`s with a
Kubernetes-style field path (`spec.replicatedJobs[0].replicas`): a user never sees a traceback.

`placer plan` reads hundreds of JobSet files: YAML goes through libyaml when PyYAML has it. (A
kubectl JSON snapshot is decoded in one call by `placer.model.kube_objects`; this reader is its
fallback for other files, and names what is wrong in them.)
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, ValidationError

from placer.model.errors import InputError
from placer.model.limits import MAX_NESTING_DEPTH

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


class _Loader(yaml.SafeLoader):
    """SafeLoader without the timestamp rule: Kubernetes reads timestamps as strings, and a manifest
    must stay JSON-serializable for the writers."""


_Loader.yaml_implicit_resolvers = {
    ch: [(tag, rx) for tag, rx in resolvers if tag != "tag:yaml.org,2002:timestamp"]
    for ch, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}


# libyaml parses several times faster; the same resolvers, so the same values. It is only ever
# the first try: on any error the pure-Python loader parses again, so messages stay its own.
_FastLoader: type[Any] | None = None
if getattr(yaml, "__with_libyaml__", False):

    class _CLoader(yaml.CSafeLoader):
        """libyaml parser with `_Loader`'s resolvers."""

    _CLoader.yaml_implicit_resolvers = _Loader.yaml_implicit_resolvers
    _FastLoader = _CLoader


Document = tuple[str, Mapping[str, Any]]
"""(source, object): `source` is the file name; List items are yielded one by one."""


def expand_paths(paths: Sequence[str | Path]) -> list[Path]:
    """Files as given; directories recursively, manifest suffixes only, sorted for determinism."""
    files: list[Path] = []
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            files.extend(
                sorted(p for p in path.rglob("*") if p.is_file() and p.suffix in MANIFEST_SUFFIXES)
            )
        elif path.is_file():
            files.append(path)
        else:
            raise InputError("no such file or directory", source=str(path), code="missing-file")
    return files


def _load_text(path: Path) -> list[Any]:
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise InputError(f"cannot read: {e}", source=str(path), code="read") from e
    if path.suffix == ".json":
        try:
            return [json.loads(text)]
        except RecursionError as e:  # the C parser's own guard, near 1,000 levels
            raise _too_deep(path) from e
        except json.JSONDecodeError as e:
            raise InputError(
                f"invalid JSON at line {e.lineno} column {e.colno}: {e.msg}",
                source=str(path),
                code="syntax",
            ) from e
    if _yaml_depth_over(text, MAX_NESTING_DEPTH):
        raise _too_deep(path)
    if _FastLoader is not None:
        try:
            return [d for d in yaml.load_all(text, Loader=_FastLoader) if d is not None]
        except yaml.YAMLError:
            pass  # parsed again below, for the pure-Python loader's message
    try:
        return [d for d in yaml.load_all(text, Loader=_Loader) if d is not None]
    except RecursionError as e:
        raise _too_deep(path) from e
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None) or getattr(e, "context_mark", None)
        where = f" at line {mark.line + 1} column {mark.column + 1}" if mark else ""
        problem = getattr(e, "problem", None) or str(e)
        raise InputError(f"invalid YAML{where}: {problem}", source=str(path), code="syntax") from e


def _too_deep(path: Path) -> InputError:
    return InputError(
        f"nested deeper than {MAX_NESTING_DEPTH} levels", source=str(path), code="nesting"
    )


_NESTING_MARKS = "[{-:?"
"""Every YAML nesting level needs one of these characters (a flow bracket, a sequence dash, a
mapping colon, a complex-key mark), so a text with fewer of them cannot nest deeper."""


def _yaml_depth_over(text: str, limit: int) -> bool:
    """Whether YAML `text` nests deeper than `limit`, read from the parser's events (a loop, not a
    recursion: libyaml's composer recurses in C and crashes the process on very deep input).
    Skipped for texts too short in nesting marks to be that deep; otherwise it costs about a
    seventh of a load. A syntax error is left to the loaders, which report it."""
    if sum(map(text.count, _NESTING_MARKS)) <= limit:
        return False
    opening = (yaml.MappingStartEvent, yaml.SequenceStartEvent)
    closing = (yaml.MappingEndEvent, yaml.SequenceEndEvent)
    depth = 0
    try:
        for event in yaml.parse(text, Loader=_FastLoader or _Loader):
            if isinstance(event, opening):
                depth += 1
                if depth > limit:
                    return True
            elif isinstance(event, closing):
                depth -= 1
    except yaml.YAMLError:
        return False
    return False


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
    kind = str(obj.get("kind") or "object")
    if not isinstance(meta, Mapping):
        return kind
    name = meta.get("name", "?")
    if kind in _CLUSTER_SCOPED:
        return f"{kind}/{name}"
    return f"{meta.get('namespace') or 'default'}/{name}"


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
