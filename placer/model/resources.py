"""Resource quantities and pod requests by the Kubernetes rules.

Quantities are parsed once, by Kubernetes' quantity grammar (`parse_quantity`: ASCII digits, the SI
and binary suffixes, finite, at most int64), into `Decimal`, so that `500m` and `0.5` compare
equal and nothing downstream parses strings. This is the one quantity parser: requests, limits,
overhead, allocatable, compact descriptions, catalogs and `--add-pool` all read through
`parse_resource_map`. What a pod asks of its node is `pod_requests.pod_request`, built on these.
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Iterable, Mapping
from decimal import ROUND_CEILING, Decimal
from typing import Any

from placer.model.errors import InputError
from placer.model.messages import echo
from placer.model.read.names import check, qualified_name_problem

__all__ = [
    "MAX_QUANTITY",
    "MAX_QUANTITY_CHARS",
    "PODS",
    "ResourceMap",
    "add_resources",
    "as_scheduled",
    "is_accelerator",
    "is_extended_resource",
    "is_hugepages",
    "left_after",
    "overcommit_allowed",
    "parse_quantity",
    "parse_resource_map",
    "pods_that_fit",
    "pods_usage",
    "subtract_resources",
]

HUGEPAGES = "hugepages-"
"""The prefix of `hugepages-<page size>` resource names."""
PODS = "pods"
"""The allocatable slot count every pod uses one of."""

ResourceMap = dict[str, Decimal]

_ACCELERATOR_HINTS = ("gpu", "tpu", "neuron", "accelerator", "habana", "gaudi")


MAX_QUANTITY = Decimal(2**63 - 1)
"""Kubernetes quantities are int64 underneath (in milli-units for fractional ones); larger values
are refused, so that nothing downstream scales a 10^24 into a solver model."""
MAX_QUANTITY_CHARS = 100
"""Longest quantity text read: an int64 with nine decimals and a suffix is under 40."""
_NANO = Decimal("1e-9")
_TRIMMED = " \x85\xa0\u1680" + "".join(map(chr, range(0x2000, 0x200B))) + "\u202f\u205f\u3000"
"""What the API server trims from a quantity string (`Quantity.UnmarshalJSON`: Go's
`strings.TrimSpace` on the JSON text between the quotes): the space and the Unicode spaces a JSON
encoder writes as they are. Tabs and newlines arrive escaped (`\\t`), so they are not trimmed, nor
are U+2028 and U+2029, which Go's encoder escapes."""

_QUANTITY = re.compile(
    r"(?P<number>[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+))"
    r"(?:(?P<binary>[KMGTPE]i)|[eE](?P<exponent>[+-]?[0-9]+)|(?P<decimal>[numkMGTPE]?))"
)
"""Kubernetes' quantity grammar: a signed decimal number (ASCII digits only), then a binary suffix
(Ki .. Ei), a decimal exponent (`e3`, `E-2`) or a decimal suffix (n, u, m, none, k, M .. E)."""
_BINARY = {"Ki": 1, "Mi": 2, "Gi": 3, "Ti": 4, "Pi": 5, "Ei": 6}
_DECIMAL = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
_SHAPE = "a number with an optional suffix (Ki .. Ei, n, u, m, k, M .. E, or e<exponent>)"


class QuantityError(ValueError):
    """A value that is not a Kubernetes quantity; the message says why."""


@functools.lru_cache(maxsize=4096, typed=True)  # typed: True must not hit the entry of 1
def parse_quantity(value: str | int | float) -> Decimal:
    """Parsed once per distinct spelling: a snapshot repeats "4", "100m", "16Gi" tens of thousands
    of times, and parsing is the loaders' hot spot.

    Numbers (YAML and JSON give them unquoted) are read as the text they were written as, the way
    the API server reads a JSON number into a quantity; NaN and infinities are no quantity.
    Fractions finer than 1n are rounded up to 1n, and spaces around the text are trimmed, as
    the API server does."""
    if isinstance(value, bool):
        raise QuantityError("a boolean is not a quantity")
    if isinstance(value, int):
        if value.bit_length() > 64:
            raise QuantityError(f"must be at most {MAX_QUANTITY}")
        return Decimal(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise QuantityError("must be a finite number")
        text = repr(value)
    elif isinstance(value, str):
        text = value.strip(_TRIMMED)
    else:
        raise QuantityError(f"{_kind(value)} is not a quantity")
    if len(text) > MAX_QUANTITY_CHARS:
        raise QuantityError(f"longer than {MAX_QUANTITY_CHARS} characters")
    m = _QUANTITY.fullmatch(text)
    if m is None:
        raise QuantityError(f"must be {_SHAPE}, such as 500m, 4 or 16Gi")
    number = Decimal(m["number"])
    quantity: Decimal
    if m["binary"]:
        quantity = number * (1024 ** _BINARY[m["binary"]])
    else:
        exponent = int(m["exponent"]) if m["exponent"] is not None else _DECIMAL[m["decimal"]]
        if number and exponent > 40:
            raise QuantityError(f"must be at most {MAX_QUANTITY}")
        quantity = number.scaleb(max(exponent, -40)) if number else Decimal(0)
    if int(quantity.as_tuple().exponent) < -9:
        quantity = quantity.quantize(_NANO, rounding=ROUND_CEILING)
    return quantity


def _kind(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, Mapping):
        return "a mapping"
    return f"a {type(value).__name__}"


COUNTED_IN_WHOLE_UNITS = frozenset(
    {
        "pods",
        "services",
        "replicationcontrollers",
        "resourcequotas",
        "secrets",
        "configmaps",
        "persistentvolumeclaims",
        "services.nodeports",
        "services.loadbalancers",
    }
)
"""Unprefixed resources the API server takes only in whole units, as it takes extended ones
(`IsIntegerResourceName`): a node stating `pods: 1500m` allocatable is refused."""


def parse_resource_map(
    raw: Mapping[str, Any] | None, *, source: str = "", obj: str = "", field: str = ""
) -> ResourceMap:
    """Parse `{name: quantity}` by the API server's rules: a valid quantity, not negative, not
    over int64, and a whole number for extended resources (`google.com/tpu`, `nvidia.com/gpu`:
    devices are not divided); a null quantity is zero, as the API server reads it. A violation is
    an InputError naming the field."""
    result: ResourceMap = {}
    if raw is not None and not isinstance(raw, Mapping):
        raise InputError(
            f"must be a mapping of resource names to quantities, got {echo(raw)}",
            source=source,
            obj=obj,
            field=field,
            code="quantity",
        )
    for name, value in (raw or {}).items():
        where = f"{field}.{name}" if field else str(name)
        if not isinstance(name, str) or qualified_name_problem(name):
            check(
                qualified_name_problem,
                name,
                source=source,
                obj=obj,
                field=f"{field}[{echo(name, quote=False)}]" if field else "",
                what="resource name",
            )
        try:
            # JSON null is a zero quantity to the API server (`Quantity.UnmarshalJSON`)
            quantity = Decimal(0) if value is None else parse_quantity(value)
        except QuantityError as e:
            raise InputError(
                f"invalid quantity {echo(value)}: {e}",
                source=source,
                obj=obj,
                field=where,
                code="quantity",
            ) from None
        except TypeError:  # unhashable: a list or a mapping where a quantity belongs
            raise InputError(
                f"invalid quantity {echo(value)}: {_kind(value)} is not a quantity",
                source=source,
                obj=obj,
                field=where,
                code="quantity",
            ) from None
        problem = _rule_broken(str(name), quantity)
        if problem:
            raise InputError(
                f"{problem}, got {echo(value)}",
                source=source,
                obj=obj,
                field=where,
                code="quantity",
            )
        result[str(name)] = quantity
    return result


def _rule_broken(name: str, quantity: Decimal) -> str:
    if quantity < 0:
        return "must be greater than or equal to 0"
    if quantity > MAX_QUANTITY:
        return f"must be at most {MAX_QUANTITY}"
    if quantity != quantity.to_integral_value():
        if is_extended_resource(name):
            return "must be a whole number (an extended resource)"
        if name in COUNTED_IN_WHOLE_UNITS:
            return f"must be a whole number (the API server counts {name} in whole units)"
    return ""


def add_resources(*maps: Mapping[str, Decimal]) -> ResourceMap:
    total: ResourceMap = {}
    for m in maps:
        for name, value in m.items():
            total[name] = total.get(name, Decimal(0)) + value
    return total


_MILLI = Decimal("0.001")
_ONE = Decimal(1)


def as_scheduled(m: Mapping[str, Decimal]) -> ResourceMap:
    """`m` in kube-scheduler's units: cpu rounded up to the millicore, everything else up to a
    whole unit (`Resource.Add`: `MilliValue` for cpu, `Value` for the rest). The scheduler counts
    a node's allocatable and each pod's total request so, then compares integers: two pods of
    `500500u` cpu take 1002m, more than a node of `1001m` holds, though their exact sum fits.
    Applied to whole-pod totals and allocatable only, never per container."""
    return {name: _up_to(value, _MILLI if name == "cpu" else _ONE) for name, value in m.items()}


def _up_to(value: Decimal, step: Decimal) -> Decimal:
    """`value` rounded up to a multiple of `step`; as written when it is one (`500m` stays
    `0.5`, not `0.500`, so what is printed does not change)."""
    if (value / step) == (value / step).to_integral_value():
        return value
    return value.quantize(step, rounding=ROUND_CEILING)


def subtract_resources(base: Mapping[str, Decimal], used: Mapping[str, Decimal]) -> ResourceMap:
    result = dict(base)
    for name, value in used.items():
        result[name] = result.get(name, Decimal(0)) - value
    return result


def pods_usage(request: Mapping[str, Decimal], count: int) -> ResourceMap:
    """What `count` pods of `request` use: each resource `count` times, and one `pods` slot per
    pod whatever the request says of `pods` (as a node's `JobSetUsage` counts them)."""
    used = {name: value * count for name, value in request.items() if name != PODS}
    used[PODS] = Decimal(count)
    return used


def left_after(free: Mapping[str, Decimal], used: Mapping[str, Decimal]) -> ResourceMap:
    """What `free` keeps once `used` (`pods_usage`) is placed, as `pods_that_fit` reads it: a
    resource the node lacks goes negative, so nothing more asking for it fits, and `pods` slots
    are taken only where the node counts them (a node without the entry stays unbounded).
    The planners' one rule for room beside planned pods (the ledger, the node timeline); the
    checker keeps its own."""
    left = dict(free)
    for name, value in used.items():
        if name != PODS or PODS in left:
            left[name] = left.get(name, Decimal(0)) - value
    return left


def is_extended_resource(name: str) -> bool:
    """Kubernetes' rule (`IsExtendedResourceName`): a domain-prefixed name (e.g. `nvidia.com/gpu`)
    that is not native, and native is any name containing `kubernetes.io/` (upstream's
    `IsPrefixedNativeResource`: `examplekubernetes.io/x` too, not only `*.kubernetes.io/`)."""
    if "/" not in name or name.startswith("requests."):
        return False
    return "kubernetes.io/" not in name


def is_hugepages(name: str) -> bool:
    return name.startswith(HUGEPAGES)


def overcommit_allowed(name: str) -> bool:
    """`IsOvercommitAllowed`: a request may be below its limit only for native resources that are
    not hugepages; extended resources and hugepages are requested exactly as limited."""
    return not is_extended_resource(name) and not is_hugepages(name)


def is_accelerator(name: str) -> bool:
    """Accelerators are the extended resources that placement is about (chips, GPUs)."""
    return is_extended_resource(name) and any(h in name.lower() for h in _ACCELERATOR_HINTS)


def pods_that_fit(
    free: Mapping[str, Decimal], request: Mapping[str, Decimal], extra_resources: Iterable[str] = ()
) -> int:
    """floor(min over requested resources of free/request), counting the node's `pods` slots.

    A resource the node does not have at all fits zero pods. A pod with no requests is limited only
    by the pod slots; with no `pods` entry either, the node is treated as unbounded (1000 pods).
    """
    best = int(free[PODS]) if PODS in free else 1000
    for name in (*request.keys(), *extra_resources):
        need = request.get(name, Decimal(0))
        if need <= 0:
            continue
        have = free.get(name, Decimal(0))
        best = min(best, int(have // need) if have > 0 else 0)
    return max(best, 0)
