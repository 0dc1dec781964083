"""YAML and JSON text -> Python values, within placer's limits: the one parser of every input.

Manifests, snapshots, descriptions, catalogs (`placer.model.read.manifests`), plan files and
placement records (the extender, the controller's annotations) and request bodies parse through
here, so a hostile document meets the same bounds wherever it enters:

- **Nesting** at most `MAX_NESTING_DEPTH` levels, measured on the parser's events (a loop: libyaml's
  composer recurses in C and would crash the process), aliases counted at the depth they are used.
- **Expanded size**: a YAML alias stands for the whole node it names, so `[*a, *a, *a]` of an
  `&a` of ten thousand items is thirty thousand nodes, though written in a dozen bytes. Aliases
  may add at most `MAX_ALIAS_NODES` nodes to a file beyond those written out; past that the file
  is refused at once, before anything is built from it (an "alias bomb" of a few KB would
  otherwise expand to millions of nodes in every later step that walks the tree).
- **Numbers**: at most `MAX_NUMBER_CHARS` characters (Python refuses to convert integers of over
  4,300 digits, and nothing placer reads needs more than 20); JSON's non-standard `NaN` and
  `Infinity` are refused, and so is a float that overflows to infinity (`1e400`), as Kubernetes'
  JSON decoder refuses them.

Every problem is one `InputError` naming the source (with the line and column YAML and JSON give).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from typing import Any

import yaml

from placer.model.errors import InputError
from placer.model.read.limits import MAX_ALIAS_NODES, MAX_NESTING_DEPTH, MAX_NUMBER_CHARS

__all__ = ["JSON_DECODER", "load_json", "load_yaml_documents", "yaml_problem"]


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a number JSON allows")


def _finite_float(text: str) -> float:
    if len(text) > MAX_NUMBER_CHARS:
        raise ValueError(f"a number of {len(text)} characters; at most {MAX_NUMBER_CHARS}")
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"the number {text[:40]} is too large for a float")
    return value


def _bounded_int(text: str) -> int:
    if len(text) > MAX_NUMBER_CHARS:
        raise ValueError(f"a number of {len(text)} characters; at most {MAX_NUMBER_CHARS}")
    return int(text)


JSON_DECODER = json.JSONDecoder(
    parse_constant=_no_constant, parse_float=_finite_float, parse_int=_bounded_int
)
"""The standard decoder, refusing NaN, infinities and overlong numbers."""


def load_json(text: str | bytes, *, source: str = "", obj: str = "", what: str = "JSON") -> Any:
    """The value of a JSON document; an InputError names what is wrong and where."""
    try:
        if isinstance(text, bytes):
            text = text.decode("utf-8-sig")
        return JSON_DECODER.decode(text)
    except RecursionError:  # the C parser's own guard, near 1,000 levels
        raise _too_deep(source, obj) from None
    except json.JSONDecodeError as e:
        raise InputError(
            f"invalid {what} at line {e.lineno} column {e.colno}: {e.msg}",
            source=source,
            obj=obj,
            code="syntax",
        ) from None
    except UnicodeDecodeError as e:
        raise InputError(
            f"not UTF-8: {e.reason} at byte {e.start}", source=source, obj=obj, code="syntax"
        ) from None
    except ValueError as e:  # a constant, an overlong number
        message = str(e)
        raise InputError(
            f"invalid {what}: {message}", source=source, obj=obj, code="syntax"
        ) from None


def _too_deep(source: str, obj: str = "") -> InputError:
    return InputError(
        f"nested deeper than {MAX_NESTING_DEPTH} levels", source=source, obj=obj, code="nesting"
    )


# --- YAML -----------------------------------------------------------------------------------------


def _bounded_yaml_int(loader: yaml.SafeLoader, node: yaml.ScalarNode) -> Any:
    if len(node.value) > MAX_NUMBER_CHARS:
        raise yaml.constructor.ConstructorError(
            None,
            None,
            f"a number of {len(node.value)} characters; at most {MAX_NUMBER_CHARS}",
            node.start_mark,
        )
    return yaml.SafeLoader.construct_yaml_int(loader, node)


class _Loader(yaml.SafeLoader):
    """SafeLoader without the timestamp rule (Kubernetes reads timestamps as strings, and a
    manifest must stay JSON-serializable for the writers), with bounded integers."""


_Loader.yaml_implicit_resolvers = {
    ch: [(tag, rx) for tag, rx in resolvers if tag != "tag:yaml.org,2002:timestamp"]
    for ch, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}
_Loader.add_constructor("tag:yaml.org,2002:int", _bounded_yaml_int)

# libyaml parses several times faster; the same resolvers and constructors, so the same values.
# It is only ever the first try: on any error the pure-Python loader parses again, so messages
# stay its own.
_FastLoader: type[Any] | None = None
if getattr(yaml, "__with_libyaml__", False):

    class _CLoader(yaml.CSafeLoader):
        """libyaml parser with `_Loader`'s resolvers and constructors."""

    _CLoader.yaml_implicit_resolvers = _Loader.yaml_implicit_resolvers
    _CLoader.add_constructor("tag:yaml.org,2002:int", _bounded_yaml_int)
    _FastLoader = _CLoader


_NESTING_MARKS = "[{-:?"
"""Every YAML nesting level needs one of these characters (a flow bracket, a sequence dash, a
mapping colon, a complex-key mark), so a text with fewer of them cannot nest deeper."""


@dataclass
class _Frame:
    """One collection being parsed: where its node count started, its anchor, how deep the
    collections inside it go."""

    start: int
    anchor: str | None
    below: int = 0


@dataclass
class _Measure:
    """The expanded size of a YAML stream so far, from its events."""

    written: int = 0
    """Nodes as written (an alias counts one)."""
    expanded: int = 0
    """Nodes with every alias counted as the node it names."""
    stack: list[_Frame] = field(default_factory=list)
    sizes: dict[str, int] = field(default_factory=dict)
    heights: dict[str, int] = field(default_factory=dict)

    def leaf(self, size: int, height: int) -> None:
        self.written += 1
        self.expanded += size
        if self.stack:
            top = self.stack[-1]
            top.below = max(top.below, height)


def yaml_problem(text: str) -> str:
    """What makes YAML `text` too big to load ("" if nothing): nesting past `MAX_NESTING_DEPTH`,
    aliases adding more than `MAX_ALIAS_NODES` nodes, or an alias inside its own anchor (a
    structure containing itself, which kubectl's parser refuses too). Read from the parser's
    events, without building anything; skipped when the text cannot hold the problem (too few
    nesting marks, no anchor and alias). A syntax error is left to the loaders, which report it
    with its line."""
    deep = sum(map(text.count, _NESTING_MARKS)) > MAX_NESTING_DEPTH
    aliased = "&" in text and "*" in text
    if not deep and not aliased:
        return ""
    m = _Measure()
    try:
        for event in yaml.parse(text, Loader=_FastLoader or _Loader):
            if isinstance(event, yaml.ScalarEvent):
                m.leaf(1, 0)
                if event.anchor:
                    m.sizes[event.anchor], m.heights[event.anchor] = 1, 0
            elif isinstance(event, yaml.AliasEvent):
                if any(frame.anchor == event.anchor for frame in m.stack):
                    # the loaders would build a structure that contains itself
                    return f"the YAML alias *{event.anchor} is inside its own anchor (a cycle)"
                size = m.sizes.get(event.anchor or "", 1)
                height = m.heights.get(event.anchor or "", 0)
                m.leaf(size, height)
                if len(m.stack) + height > MAX_NESTING_DEPTH:
                    return f"nested deeper than {MAX_NESTING_DEPTH} levels"
            elif isinstance(event, yaml.CollectionStartEvent):
                m.written += 1
                m.expanded += 1
                m.stack.append(_Frame(m.expanded - 1, event.anchor))
                if len(m.stack) > MAX_NESTING_DEPTH:
                    return f"nested deeper than {MAX_NESTING_DEPTH} levels"
            elif isinstance(event, yaml.CollectionEndEvent):
                done = m.stack.pop()
                height = done.below + 1
                if done.anchor:
                    m.sizes[done.anchor] = m.expanded - done.start
                    m.heights[done.anchor] = height
                if m.stack:
                    m.stack[-1].below = max(m.stack[-1].below, height)
            elif isinstance(event, yaml.DocumentEndEvent):
                m.sizes.clear()  # anchors are local to their document
                m.heights.clear()
            if m.expanded - m.written > MAX_ALIAS_NODES:
                return (
                    f"aliases expand to more than {MAX_ALIAS_NODES} nodes beyond the "
                    f"{m.written} written out (YAML anchors count as what they stand for)"
                )
    except yaml.YAMLError:
        return ""
    return ""


def load_yaml_documents(text: str, *, source: str = "") -> list[Any]:
    """The non-empty documents of a YAML stream, once `yaml_problem` finds nothing wrong."""
    problem = yaml_problem(text)
    if problem:
        if problem.startswith("nested"):
            code = "nesting"
        elif problem.endswith("(a cycle)"):
            code = "cycle"
        else:
            code = "too-large"
        raise InputError(problem, source=source, code=code)
    if _FastLoader is not None:
        try:
            return [d for d in yaml.load_all(text, Loader=_FastLoader) if d is not None]
        except yaml.YAMLError:
            pass  # parsed again below, for the pure-Python loader's message
    try:
        return [d for d in yaml.load_all(text, Loader=_Loader) if d is not None]
    except RecursionError:
        raise _too_deep(source) from None
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None) or getattr(e, "context_mark", None)
        where = f" at line {mark.line + 1} column {mark.column + 1}" if mark else ""
        problem = getattr(e, "problem", None) or str(e)
        raise InputError(f"invalid YAML{where}: {problem}", source=source, code="syntax") from None
