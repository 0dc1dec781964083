"""Kubernetes names, label keys and label values, checked by the API server's rules.

A name that the API server would refuse is refused here too, where it is first read (manifests,
snapshots, compact descriptions, flags), so nothing downstream ever sees one: the `--emit`
writer builds file names from namespaces and Job names, the terminal prints them, the extender
compares them. The rules, as the Kubernetes documentation states them ("Object Names and IDs",
"Labels and Selectors"):

- **DNS-1123 label** (namespaces, replicatedJob names): at most 63 characters, lower-case letters,
  digits and `-`, starting and ending with a letter or digit.
- **DNS-1123 subdomain** (most object names: Nodes, Pods, Jobs, JobSets, PriorityClasses): at most
  253 characters, DNS-1123 labels joined by `.`.
- **Qualified name** (label keys, annotation keys, taint keys): an optional prefix that is a
  DNS-1123 subdomain, then `/`, then a name of at most 63 characters of letters, digits, `-`,
  `_` and `.`, starting and ending with a letter or digit.
- **Label value**: empty, or at most 63 characters of the same alphabet as a qualified name's
  name part, starting and ending with a letter or digit.

Each `*_problem` function returns what is wrong ("" when nothing is), cached, because a snapshot
repeats the same few label keys and values tens of thousands of times; `check` turns a problem
into the one-line `InputError` naming the file, the object and the field.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterable, Mapping
from typing import Protocol

from placer.model.errors import InputError
from placer.model.messages import echo

__all__ = [
    "MAX_LABEL_LENGTH",
    "MAX_SUBDOMAIN_LENGTH",
    "check",
    "check_label_map",
    "check_levels",
    "check_qualified_keys",
    "check_taints",
    "dns1035_label_problem",
    "dns1123_label_problem",
    "dns1123_subdomain_problem",
    "label_value_problem",
    "qualified_name_problem",
]

MAX_LABEL_LENGTH = 63
"""A DNS-1123 label, a label value, the name part of a qualified name."""
MAX_SUBDOMAIN_LENGTH = 253
"""A DNS-1123 subdomain: object names, the prefix of a qualified name."""

_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")
_DNS1035 = re.compile(r"[a-z]([-a-z0-9]*[a-z0-9])?")
_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
_NAME_PART = re.compile(r"[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?")
_CACHE = 65536


def _shape_problem(text: str, limit: int, pattern: re.Pattern[str], what: str) -> str:
    """The length rule, then the pattern, in the order the API server lists them (it lists
    both; the first is named here)."""
    if len(text) > limit:
        return f"must be at most {limit} characters, got {len(text)}"
    return "" if pattern.fullmatch(text) else f"must be {what}"


@functools.lru_cache(maxsize=_CACHE)
def dns1123_label_problem(text: str) -> str:
    if not text:
        return "must not be empty"
    return _shape_problem(
        text,
        MAX_LABEL_LENGTH,
        _LABEL,
        "a DNS-1123 label: lower-case letters, digits and '-', starting and ending with a "
        "letter or digit",
    )


def dns1035_label_problem(text: str) -> str:
    """A DNS-1035 label: a DNS-1123 label that starts with a letter (JobSet's rule for the names
    of the child Jobs and pods it makes, and for group names)."""
    if not text:
        return "must not be empty"
    return _shape_problem(
        text,
        MAX_LABEL_LENGTH,
        _DNS1035,
        "a DNS-1035 label: lower-case letters, digits and '-', starting with a letter and ending "
        "with a letter or digit",
    )


@functools.lru_cache(maxsize=_CACHE)
def dns1123_subdomain_problem(text: str) -> str:
    if not text:
        return "must not be empty"
    return _shape_problem(
        text,
        MAX_SUBDOMAIN_LENGTH,
        _SUBDOMAIN,
        "a DNS-1123 subdomain: lower-case letters, digits, '-' and '.', each '.'-separated "
        "part starting and ending with a letter or digit",
    )


@functools.lru_cache(maxsize=_CACHE)
def qualified_name_problem(text: str) -> str:
    """A label, annotation or taint key: `[prefix/]name`."""
    if not text:
        return "must not be empty"
    prefix, slash, name = text.rpartition("/")
    if slash:
        if not prefix:
            return "has an empty prefix before '/'"
        if "/" in prefix:
            return "may contain at most one '/'"
        problem = dns1123_subdomain_problem(prefix)
        if problem:
            return f"prefix {problem}"
    if not name:
        return "has an empty name after '/'"
    if len(name) > MAX_LABEL_LENGTH:
        return f"name part must be at most {MAX_LABEL_LENGTH} characters, got {len(name)}"
    if not _NAME_PART.fullmatch(name):
        return (
            "must be a qualified name: an optional DNS-1123 subdomain and '/', then letters, "
            "digits, '-', '_' and '.', starting and ending with a letter or digit"
        )
    return ""


@functools.lru_cache(maxsize=_CACHE)
def label_value_problem(text: str) -> str:
    if not text:
        return ""
    return _shape_problem(
        text,
        MAX_LABEL_LENGTH,
        _NAME_PART,
        "a label value: empty, or letters, digits, '-', '_' and '.', starting and ending with "
        "a letter or digit",
    )


Rule = Callable[[str], str]


def check(
    rule: Rule, value: object, *, source: str = "", obj: str = "", field: str = "", what: str = ""
) -> str:
    """`value` if it is a string the rule accepts, else the one-line InputError (the value
    echoed, cut and escaped)."""
    problem = "must be a string" if not isinstance(value, str) else rule(value)
    if problem:
        label = f"{what} " if what else ""
        raise InputError(
            f"{label}{echo(value)} {problem}", source=source, obj=obj, field=field, code="name"
        )
    assert isinstance(value, str)
    return value


def check_qualified_keys(
    keys: Iterable[object], *, source: str = "", obj: str = "", field: str = "", what: str = "key"
) -> None:
    """Every key a qualified name (label or annotation keys); the field names the bad key."""
    for key in keys:
        if not isinstance(key, str) or qualified_name_problem(key):
            check(
                qualified_name_problem,
                key,
                source=source,
                obj=obj,
                field=_member(field, key),
                what=what,
            )


def check_label_map(
    labels: Mapping[str, object] | Mapping[object, object],
    *,
    source: str = "",
    obj: str = "",
    field: str = "",
) -> None:
    """Label keys qualified names, values label values (node labels, selectors, templates)."""
    for key, value in labels.items():
        if not isinstance(key, str) or qualified_name_problem(key):
            check(
                qualified_name_problem,
                key,
                source=source,
                obj=obj,
                field=_member(field, key),
                what="key",
            )
        if not isinstance(value, str) or label_value_problem(value):
            check(label_value_problem, value, source=source, obj=obj, field=_member(field, key))


def _member(field: str, key: object) -> str:
    shown = echo(key, limit=80, quote=False) if isinstance(key, str) else echo(key)
    return f"{field}[{shown}]" if field else f"[{shown}]"


class _TaintLike(Protocol):
    @property
    def key(self) -> str: ...
    @property
    def value(self) -> str: ...
    @property
    def effect(self) -> str: ...


def check_taints(
    taints: Iterable[_TaintLike],
    *,
    source: str = "",
    obj: str = "",
    field: str = "",
    beside: Iterable[_TaintLike] = (),
) -> None:
    """Taint keys are qualified names, values label values, and no key is tainted twice with one
    effect, counting the taints `beside` them (a description's override adds to its pool's), as
    the API server stores a Node's taints (Nodes, descriptions)."""
    seen = {(t.key, t.effect) for t in beside}
    for i, t in enumerate(taints):
        check(qualified_name_problem, t.key, source=source, obj=obj, field=f"{field}[{i}].key")
        check(label_value_problem, t.value, source=source, obj=obj, field=f"{field}[{i}].value")
        if (t.key, t.effect) in seen:
            raise InputError(
                f"taint {echo(t.key)} with effect {t.effect} listed twice"
                " (a node's taints are unique by key and effect)",
                source=source,
                obj=obj,
                field=f"{field}[{i}]",
                code="name",
            )
        seen.add((t.key, t.effect))


def check_levels(
    levels: Iterable[object], *, source: str = "", obj: str = "", field: str = ""
) -> tuple[str, ...]:
    """Topology levels, coarse to fine: node label keys (qualified names), none empty, none
    twice (`--levels`, descriptions, catalogs, Kueue Topologies)."""
    seen: list[str] = []
    for i, level in enumerate(levels):
        where = f"{field}[{i}]"
        key = check(
            qualified_name_problem, level, source=source, obj=obj, field=where, what="level"
        )
        if key in seen:
            raise InputError(
                f"level {echo(key)} listed twice", source=source, obj=obj, field=where, code="name"
            )
        seen.append(key)
    return tuple(seen)
