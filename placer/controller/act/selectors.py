"""Label selectors and JSON merge patches as the API server applies them, for the memory cluster.

`MemoryCluster` (and through it the HTTP API-server stand-in in tests/controller/) must filter and
patch exactly like a real API server, or tests would pass against behavior no cluster has. Kept
apart so the rules are tested on their own.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from placer.controller.adapter import copy_json
from placer.model.errors import InputError

__all__ = ["Requirement", "matches_selector", "merge_patch", "parse_selector"]

Requirement = tuple[str, str, frozenset[str]]
"""(key, operator, values); operators: exists, !exists, =, !=, in, notin."""

_SET = re.compile(r"^\s*([^\s!=]+)\s+(in|notin)\s+\(([^)]*)\)\s*$")


def _split(text: str) -> list[str]:
    """Split on commas outside parentheses (`a in (x,y),b` is two requirements)."""
    parts, depth, current = [], 0, ""
    for ch in text:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append(current)
            current = ""
        else:
            current += ch
    parts.append(current)
    return [p.strip() for p in parts if p.strip()]


def parse_selector(text: str) -> list[Requirement]:
    """Label-selector syntax: `k`, `!k`, `k=v`, `k==v`, `k!=v`, `k in (a,b)`, `k notin (a)`."""
    result: list[Requirement] = []
    for part in _split(text or ""):
        m = _SET.match(part)
        if m:
            values = frozenset(v.strip() for v in m.group(3).split(",") if v.strip())
            result.append((m.group(1), m.group(2), values))
        elif "!=" in part:
            k, v = part.split("!=", 1)
            result.append((k.strip(), "!=", frozenset([v.strip()])))
        elif "=" in part:
            k, v = part.split("==", 1) if "==" in part else part.split("=", 1)
            result.append((k.strip(), "=", frozenset([v.strip()])))
        elif part.startswith("!"):
            result.append((part[1:].strip(), "!exists", frozenset()))
        elif re.fullmatch(r"[A-Za-z0-9./_-]+", part):
            result.append((part, "exists", frozenset()))
        else:
            raise InputError(
                f"unparsable label selector {text!r}", field="labelSelector", code="selector"
            )
    return result


def matches_selector(labels: Mapping[str, str], selector: list[Requirement]) -> bool:
    for key, op, values in selector:
        present = key in labels
        value = labels.get(key)
        ok = {
            "exists": present,
            "!exists": not present,
            "=": present and value in values,
            "in": present and value in values,
            "!=": not present or value not in values,
            "notin": not present or value not in values,
        }[op]
        if not ok:
            return False
    return True


_SCALARS = (str, int, float)


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386: objects merge recursively, `null` deletes a key, anything else replaces. The
    result shares nothing with `patch` but its scalars. JSON objects are dicts: `type(x) is dict`
    spares them the slower `Mapping` ABC check, which stays for any other mapping."""
    if type(patch) is not dict and not isinstance(patch, Mapping):
        return copy_json(patch)
    result = dict(target) if type(target) is dict or isinstance(target, Mapping) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        elif isinstance(value, _SCALARS):
            result[key] = value
        else:
            result[key] = merge_patch(result.get(key), value)
    return result
