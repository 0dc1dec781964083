"""The compact description's name and label templates: `{i}`, `{i//4}`, `{h:02d}`.

Why a language of its own, and a small one: a pool template expands into hundreds of nodes, and
hierarchies (blocks of four pools, sub-blocks, NVL72 cliques) are integer arithmetic on the pool
and host indices. Only a variable, left-to-right operations with constants and a format spec are
accepted; results stay within int64 and widths within a Kubernetes name, since a description is
input like any other and a template must not be made to allocate without bound.
"""

from __future__ import annotations

import operator
import re
from collections.abc import Callable, Mapping

from placer.model.errors import InputError
from placer.model.messages import echo

__all__ = ["render_template"]

_FIELD = re.compile(r"\{([^{}]*)\}")
_EXPR = re.compile(
    r"^\s*([A-Za-z_]\w*)((?:\s*(?://|%|\+|-|\*)\s*[0-9]{1,9})*)\s*(?::([^{}]*))?$", re.ASCII
)
"""A variable, operations with constants of at most nine ASCII digits, a format spec."""
_OP = re.compile(r"(//|%|\+|-|\*)\s*([0-9]{1,9})", re.ASCII)
_APPLY: Mapping[str, Callable[[int, int], int]] = {
    "//": operator.floordiv,
    "%": operator.mod,
    "+": operator.add,
    "-": operator.sub,
    "*": operator.mul,
}
_MAX_VALUE = 2**63
"""Template arithmetic stays within int64: `{i*999999999*999999999*...}` stops here."""
_MAX_WIDTH = 253
"""Longest Kubernetes name: a wider format spec (`{h:09999999999d}`) only allocates."""


def render_template(
    template: str, values: Mapping[str, int | str], *, source: str = "", field: str = ""
) -> str:
    """Substitute `{var}`, `{var//k}`, `{var%k+1}`, `{var:02d}`; anything else is an InputError."""

    def bad(message: str) -> InputError:
        return InputError(message, source=source, field=field, code="template")

    def one(m: re.Match[str]) -> str:
        expr = _EXPR.match(m.group(1))
        if not expr or expr.group(1) not in values:
            known = ", ".join(f"{{{k}}}" for k in values)
            raise bad(f"bad template field {echo(m.group(0))} in {echo(template)} (known: {known})")
        value = values[expr.group(1)]
        for op, num in _OP.findall(expr.group(2) or ""):
            if not isinstance(value, int):
                raise bad(f"arithmetic on a name in {echo(template)}")
            k = int(num)
            if op in ("//", "%") and k == 0:
                raise bad(f"division by zero in {echo(template)}")
            value = _APPLY[op](value, k)
            if abs(value) >= _MAX_VALUE:
                raise bad(f"arithmetic past int64 in {echo(template)}")
        spec = expr.group(3) or ""
        widths = re.findall(r"[0-9]+", spec)
        if any(len(width) > 3 or int(width) > _MAX_WIDTH for width in widths):
            raise bad(f"format width over {_MAX_WIDTH} in {echo(m.group(0))}")
        try:
            return format(value, spec)
        except ValueError as e:
            raise bad(f"bad format spec in {echo(m.group(0))}: {e}") from e

    return _FIELD.sub(one, template)
