"""What a pod asks of its node, by the rules the API server validates and kube-scheduler counts.

The planner, the checker, the snapshot loader and the controller must agree with kube-scheduler on
what a pod takes, or a plan puts pods where they cannot bind. kube-scheduler's fit counts
`PodRequests` (k8s.io/component-helpers, v0.36.3): the containers' requests (app containers and
sidecars add; a plain init container runs alone with the sidecars started before it), replaced by
the pod-level requests (`spec.resources`, on by default since Kubernetes 1.34) for the resources
set there, plus `spec.overhead`. A template is read as the pod it becomes: the API server's
defaults are applied first (a container's limit is its missing request; a pod-level limit is the
missing pod-level request of a resource no container requests), then its rules, so a template the
API server would refuse is refused here, with the field that breaks the rule.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from decimal import ROUND_CEILING, Decimal
from typing import Any

from placer.model.errors import InputError
from placer.model.read.names import qualified_name_problem
from placer.model.resources import (
    HUGEPAGES,
    ResourceMap,
    add_resources,
    as_scheduled,
    is_hugepages,
    overcommit_allowed,
    parse_quantity,
    parse_resource_map,
)

__all__ = ["pod_request"]

_CONTAINER_STANDARD = frozenset({"cpu", "memory", "ephemeral-storage"})
"""The unprefixed names a container may request besides `hugepages-<size>`."""
_POD_LEVEL = frozenset({"cpu", "memory"})
"""What `spec.resources` may hold besides `hugepages-<size>` (`IsSupportedPodLevelResource`)."""
_NOT_OVERCOMMITTED = {
    False: "extended resources are not overcommitted",
    True: "hugepages are not overcommitted",
}
_QOS = frozenset({"cpu", "memory"})
"""Hugepages need one of these beside them, in the same requirements."""


class _Where:
    """Where a rule is broken: the file and object every error of one pod names."""

    def __init__(self, source: str, obj: str) -> None:
        self.source, self.obj = source, obj

    def error(self, message: str, field: str, code: str = "quantity") -> InputError:
        return InputError(message, source=self.source, obj=self.obj, field=field, code=code)


def _container_name_problem(name: str) -> str:
    """`validateContainerResourceName`: unprefixed names are the standard ones; prefixed names
    outside `kubernetes.io/` must be extended resource names (`IsExtendedResourceName`)."""
    if "/" not in name:
        if name in _CONTAINER_STANDARD or is_hugepages(name):
            return ""
        return (
            "must be a standard resource for containers "
            "(cpu, memory, ephemeral-storage, hugepages-<size>)"
        )
    if "kubernetes.io/" in name:
        return ""
    if name.startswith("requests.") or qualified_name_problem(f"requests.{name}"):
        return "does not follow the extended resource name standard"
    return ""


def _pod_level_name_problem(name: str) -> str:
    if name in _POD_LEVEL or is_hugepages(name):
        return ""
    return "is not supported at pod level (cpu, memory, hugepages-<size>)"


def _page_size(name: str) -> Decimal | None:
    """The page size a `hugepages-<size>` name says, when it is a whole number of bytes."""
    try:
        page = parse_quantity(name[len(HUGEPAGES) :])
    except ValueError:
        return None
    return page if page > 0 and page == page.to_integral_value() else None


def _pages_problem(name: str, quantity: Decimal) -> str:
    """`IsHugePageResourceValueDivisible`: a whole number of pages of the size the name says,
    the quantity rounded up to a whole byte first (Go's `Quantity.Value()`)."""
    page = _page_size(name)
    if page is None:
        return f"resource name {name!r} names no page size"
    if quantity.to_integral_value(rounding=ROUND_CEILING) % page:
        return f"must be a whole number of {name[len(HUGEPAGES) :]} pages, got {quantity} bytes"
    return ""


def _requirements(
    resources: Mapping[str, Any],
    where: _Where,
    field: str,
    name_problem: Callable[[str], str],
) -> tuple[ResourceMap, ResourceMap]:
    """(requests, limits) of one `resources` block, checked by `validateResourceRequirements`."""
    limits = parse_resource_map(
        resources.get("limits"), source=where.source, obj=where.obj, field=f"{field}.limits"
    )
    requests = parse_resource_map(
        resources.get("requests"), source=where.source, obj=where.obj, field=f"{field}.requests"
    )
    for kind, values in (("limits", limits), ("requests", requests)):
        for name, quantity in values.items():
            problem = name_problem(name)
            if problem:
                raise where.error(f"resource name {name!r} {problem}", f"{field}.{kind}.{name}")
            problem = _pages_problem(name, quantity) if is_hugepages(name) else ""
            if problem:
                raise where.error(problem, f"{field}.{kind}.{name}")
    for name, request in requests.items():
        limit = limits.get(name)
        problem = ""
        exact = "" if overcommit_allowed(name) else _NOT_OVERCOMMITTED[is_hugepages(name)]
        if limit is None:
            if exact:
                problem = f"needs a limit equal to it ({exact})"
        elif exact and request != limit:
            problem = f"must equal the limit {limit} ({exact})"
        elif request > limit:
            problem = f"must be less than or equal to the limit {limit}"
        if problem:
            raise where.error(problem, f"{field}.requests.{name}")
    named = {*requests, *limits}
    if any(is_hugepages(n) for n in named) and not named & _QOS:
        raise where.error("hugepages require a cpu or memory request or limit beside them", field)
    return requests, limits


def _container(container: object, where: _Where, field: str) -> tuple[ResourceMap, ResourceMap]:
    """(requests, limits) of one container; its limit is a request it does not state."""
    if not isinstance(container, Mapping):
        raise where.error("a container must be a mapping", field, code="container")
    resources = container.get("resources") or {}
    if not isinstance(resources, Mapping):
        raise where.error("resources must be a mapping", f"{field}.resources", code="container")
    requests, limits = _requirements(
        resources, where, f"{field}.resources", _container_name_problem
    )
    return {**limits, **requests}, limits


def _containers(pod_spec: Mapping[str, Any], key: str, where: _Where, field: str) -> list[Any]:
    containers = pod_spec.get(key) or []
    if not isinstance(containers, list):
        raise where.error(f"{key} must be a list", f"{field}.{key}", code="container")
    return containers


def _peak(maps: list[ResourceMap]) -> ResourceMap:
    return {
        name: max(m.get(name, Decimal(0)) for m in maps) for name in {k for m in maps for k in m}
    }


def _aggregate(
    pod_spec: Mapping[str, Any], where: _Where, field: str
) -> tuple[ResourceMap, ResourceMap, list[ResourceMap]]:
    """The containers' requests and limits as the pod's (`AggregateContainerRequests` and
    `AggregateContainerLimits`): max(app + sidecars, each plain init container with the sidecars
    before it), and the app containers' own limits (each at most the pod-level limit)."""
    app = [
        _container(c, where, f"{field}.containers[{i}]")
        for i, c in enumerate(_containers(pod_spec, "containers", where, field))
    ]
    totals = [add_resources(*(part[0] for part in app)), add_resources(*(part[1] for part in app))]
    peaks: list[list[ResourceMap]] = [[], []]
    sidecars: list[ResourceMap] = [{}, {}]
    for i, c in enumerate(_containers(pod_spec, "initContainers", where, field)):
        own = _container(c, where, f"{field}.initContainers[{i}]")
        for k in (0, 1):
            if isinstance(c, Mapping) and c.get("restartPolicy") == "Always":
                sidecars[k] = add_resources(sidecars[k], own[k])
                peaks[k].append(sidecars[k])
            else:
                peaks[k].append(add_resources(sidecars[k], own[k]))
    requests, limits = (_peak([add_resources(totals[k], sidecars[k]), *peaks[k]]) for k in (0, 1))
    return requests, limits, [part[1] for part in app]


def _pod_level(
    pod_spec: Mapping[str, Any],
    aggregate: tuple[ResourceMap, ResourceMap, list[ResourceMap]],
    where: _Where,
    field: str,
) -> ResourceMap:
    """The pod-level requests after the API server's defaults, checked as it checks them."""
    raw = pod_spec.get("resources")
    if raw is None:
        return {}
    at = f"{field}.resources"
    if not isinstance(raw, Mapping):
        raise where.error("resources must be a mapping", at, code="container")
    if raw.get("claims") is not None:
        raise where.error("claims may not be set at pod level", f"{at}.claims", code="container")
    requests, limits = _requirements(raw, where, at, _pod_level_name_problem)
    if not requests and not limits:
        return {}
    container_requests, container_limits, app_limits = aggregate
    for name, value in container_limits.items():  # defaultHugePagePodLimits
        if is_hugepages(name) and name not in limits:  # a request without one is refused
            limits[name] = value
    if limits:  # defaultPodRequests
        for name, value in container_requests.items():
            if name in _POD_LEVEL and name not in requests:
                requests[name] = value
        for name, value in limits.items():
            requests.setdefault(name, value)
    for name, request in requests.items():  # validatePodResourceConsistency, after the defaults
        limit = limits.get(name)
        if limit is not None and request > limit:
            raise where.error(
                f"must be less than or equal to the limit {limit}", f"{at}.requests.{name}"
            )
        if request < container_requests.get(name, Decimal(0)):
            raise where.error(
                f"must be at least the containers' requests, {container_requests[name]}",
                f"{at}.requests.{name}",
            )
    # The API server also wants pod-level hugepages limits at least the containers'; a container
    # requests hugepages as it limits them, so the requests' rule above has refused that already.
    for name, limit in limits.items():
        for i, own in enumerate(app_limits):
            if own.get(name, Decimal(0)) > limit:
                raise where.error(
                    f"must be at most the pod-level limit {limit}",
                    f"{field}.containers[{i}].resources.limits.{name}",
                )
    return requests


def pod_request(
    pod_spec: Mapping[str, Any], *, source: str = "", obj: str = "", field: str = "spec"
) -> ResourceMap:
    """The pod's request as kube-scheduler counts it (`PodRequests`): the containers' (sidecars
    add, a plain init container counts with the sidecars before it), each resource set at pod
    level replaced by that, plus the overhead, in the scheduler's units (`as_scheduled`: cpu up to
    the millicore, the rest up to whole units). Zero entries are dropped so that shapes compare
    by what matters."""
    where = _Where(source, obj)
    aggregate = _aggregate(pod_spec, where, field)
    total = {**aggregate[0], **_pod_level(pod_spec, aggregate, where, field)}
    overhead = parse_resource_map(
        pod_spec.get("overhead"), source=source, obj=obj, field=f"{field}.overhead"
    )
    total = as_scheduled(add_resources(total, overhead))
    return {name: value for name, value in sorted(total.items()) if value != 0}
