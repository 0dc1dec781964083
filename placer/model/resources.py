"""Resource quantities and pod requests by the Kubernetes rules.

Quantities are parsed once, with `kubernetes.utils.parse_quantity`, into `Decimal`, so that `500m`
and `0.5` compare equal and nothing downstream parses strings. The pod-request rule lives here
because the planner, the checker and the snapshot loader must all agree on what a pod asks for.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Mapping
from decimal import Decimal
from typing import Any

from kubernetes.utils import parse_quantity

from placer.model.errors import InputError

__all__ = [
    "MAX_QUANTITY",
    "PODS",
    "ResourceMap",
    "add_resources",
    "is_accelerator",
    "is_extended_resource",
    "parse_resource_map",
    "pod_request",
    "pods_that_fit",
    "subtract_resources",
]

PODS = "pods"
"""The allocatable slot count every pod uses one of."""

ResourceMap = dict[str, Decimal]

_ACCELERATOR_HINTS = ("gpu", "tpu", "neuron", "accelerator", "habana", "gaudi")


@functools.lru_cache(maxsize=4096)
def _quantity(value: str | int | float) -> Decimal:
    """Parsed once per distinct spelling: a snapshot repeats "4", "100m", "16Gi" tens of thousands
    of times, and parse_quantity is the loaders' hot spot."""
    return Decimal(parse_quantity(value))  # type: ignore[no-untyped-call]


MAX_QUANTITY = Decimal(2**63 - 1)
"""Kubernetes quantities are int64 underneath (in milli-units for fractional ones); larger values
are refused, so that nothing downstream scales a 10^24 into a solver model."""


def parse_resource_map(
    raw: Mapping[str, Any] | None, *, source: str = "", obj: str = "", field: str = ""
) -> ResourceMap:
    """Parse `{name: quantity}` by the API server's rules: a valid quantity, not negative, not
    over int64, and a whole number for extended resources (`google.com/tpu`, `nvidia.com/gpu`:
    devices are not divided). A violation is an InputError naming the field."""
    result: ResourceMap = {}
    for name, value in (raw or {}).items():
        where = f"{field}.{name}" if field else str(name)
        try:
            if not isinstance(value, str | int | float) or isinstance(value, bool):
                raise TypeError(f"quantity of type {type(value).__name__}")
            quantity = _quantity(value)
        except (ValueError, TypeError, ArithmeticError) as e:
            raise InputError(
                f"invalid quantity {value!r}", source=source, obj=obj, field=where, code="quantity"
            ) from e
        problem = _rule_broken(str(name), quantity)
        if problem:
            raise InputError(
                f"{problem}, got {value!r}", source=source, obj=obj, field=where, code="quantity"
            )
        result[str(name)] = quantity
    return result


def _rule_broken(name: str, quantity: Decimal) -> str:
    if quantity < 0:
        return "must be greater than or equal to 0"
    if quantity > MAX_QUANTITY:
        return f"must be at most {MAX_QUANTITY}"
    if _whole_numbers_only(name) and quantity != quantity.to_integral_value():
        return "must be a whole number (an extended resource)"
    return ""


@functools.lru_cache(maxsize=1024)
def _whole_numbers_only(name: str) -> bool:
    return is_extended_resource(name)


def add_resources(*maps: Mapping[str, Decimal]) -> ResourceMap:
    total: ResourceMap = {}
    for m in maps:
        for name, value in m.items():
            total[name] = total.get(name, Decimal(0)) + value
    return total


def subtract_resources(base: Mapping[str, Decimal], used: Mapping[str, Decimal]) -> ResourceMap:
    result = dict(base)
    for name, value in used.items():
        result[name] = result.get(name, Decimal(0)) - value
    return result


def _max_resources(a: Mapping[str, Decimal], b: Mapping[str, Decimal]) -> ResourceMap:
    return {name: max(a.get(name, Decimal(0)), b.get(name, Decimal(0))) for name in {*a, *b}}


def _container_request(
    container: Mapping[str, Any], *, source: str, obj: str, field: str
) -> ResourceMap:
    """Requests default to limits, per resource, when only the limit is set."""
    if not isinstance(container, Mapping):
        raise InputError(
            "a container must be a mapping", source=source, obj=obj, field=field, code="container"
        )
    resources = container.get("resources") or {}
    if not isinstance(resources, Mapping):
        raise InputError(
            "resources must be a mapping",
            source=source,
            obj=obj,
            field=f"{field}.resources",
            code="container",
        )
    limits = parse_resource_map(
        resources.get("limits"), source=source, obj=obj, field=f"{field}.resources.limits"
    )
    requests = parse_resource_map(
        resources.get("requests"), source=source, obj=obj, field=f"{field}.resources.requests"
    )
    for name, request in requests.items():
        limit = limits.get(name)
        if limit is None:
            continue
        problem = ""
        if is_extended_resource(name) and request != limit:
            problem = f"must equal the limit {limit} (extended resources are not overcommitted)"
        elif request > limit:
            problem = f"must be less than or equal to the limit {limit}"
        if problem:
            raise InputError(
                problem,
                source=source,
                obj=obj,
                field=f"{field}.resources.requests.{name}",
                code="quantity",
            )
    return {**limits, **requests}


def _container_list(
    pod_spec: Mapping[str, Any], key: str, source: str, obj: str, field: str
) -> list[Any]:
    containers = pod_spec.get(key) or []
    if not isinstance(containers, list):
        raise InputError(
            f"{key} must be a list",
            source=source,
            obj=obj,
            field=f"{field}.{key}",
            code="container",
        )
    return containers


def pod_request(
    pod_spec: Mapping[str, Any], *, source: str = "", obj: str = "", field: str = "spec"
) -> ResourceMap:
    """Effective pod request: max(app + sidecars, largest plain init container) + overhead.

    Sidecars (init containers with restartPolicy Always) run beside the app containers, so they add;
    a plain init container runs alone before them, with the sidecars started before it, so it counts
    together with those sidecars. Zero entries are dropped so that shapes compare by what matters.
    """
    app = add_resources(
        *(
            _container_request(c, source=source, obj=obj, field=f"{field}.containers[{i}]")
            for i, c in enumerate(_container_list(pod_spec, "containers", source, obj, field))
        )
    )
    sidecars_so_far: ResourceMap = {}
    init_peak: ResourceMap = {}
    for i, c in enumerate(_container_list(pod_spec, "initContainers", source, obj, field)):
        req = _container_request(c, source=source, obj=obj, field=f"{field}.initContainers[{i}]")
        if c.get("restartPolicy") == "Always":
            sidecars_so_far = add_resources(sidecars_so_far, req)
            init_peak = _max_resources(init_peak, sidecars_so_far)
        else:
            init_peak = _max_resources(init_peak, add_resources(sidecars_so_far, req))
    running = add_resources(app, sidecars_so_far)
    overhead = parse_resource_map(
        pod_spec.get("overhead"), source=source, obj=obj, field=f"{field}.overhead"
    )
    total = add_resources(_max_resources(running, init_peak), overhead)
    return {name: value for name, value in sorted(total.items()) if value != 0}


def is_extended_resource(name: str) -> bool:
    """Kubernetes' rule: a domain-prefixed name outside kubernetes.io (e.g. `nvidia.com/gpu`)."""
    if "/" not in name or name.startswith("requests."):
        return False
    domain = name.split("/", 1)[0]
    return not (domain == "kubernetes.io" or domain.endswith(".kubernetes.io"))


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
