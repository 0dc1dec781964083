"""PriorityClass objects read by the API server's rules: what a snapshot's classes may be, which
is the default, which never preempt.

A cluster can hold only what `ValidatePriorityClass` passes (k8s.io/kubernetes
pkg/apis/scheduling/validation, v1.36.3): a user class's value at most one billion, the
`system-` prefix kept for the two classes the API server makes itself (with their values), and
`preemptionPolicy` one of two words. A snapshot holding anything else describes a cluster that
cannot exist, so it is refused, naming the class and the field (tests/cluster/
test_snapshot_rules.py asks the real API server the same questions).
"""

from __future__ import annotations

from collections.abc import Iterable

from placer.model.errors import InputError
from placer.model.kube.objects import PriorityClassObject
from placer.model.messages import echo
from placer.model.priorities import (
    PREEMPTION_POLICIES,
    SYSTEM_PRIORITY_CLASSES,
    PriorityClasses,
)
from placer.model.read.limits import INT32_MAX
from placer.model.read.names import check, dns1123_subdomain_problem

__all__ = [
    "HIGHEST_USER_PRIORITY",
    "default_of",
    "default_priority_class",
    "non_preempting",
    "priority_class_values",
    "priority_classes_of",
]

HIGHEST_USER_PRIORITY = 1_000_000_000
"""The highest value a class not named `system-...` may have (`HighestUserDefinablePriority`)."""


def _problem(pc: PriorityClassObject) -> tuple[str, str] | None:
    """(field, what is wrong) of a class the API server would not store, or None."""
    name, value = pc.metadata.name, pc.value
    if not -INT32_MAX - 1 <= value <= INT32_MAX:
        return "value", f"must be an int32 ({-INT32_MAX - 1} .. {INT32_MAX}), got {echo(value)}"
    if name.startswith("system-"):
        known = SYSTEM_PRIORITY_CLASSES.get(name)
        if known is None:
            return "metadata.name", "names starting 'system-' are kept for the system's own classes"
        if value != known:
            return "value", f"must be {known} for {name}, got {echo(value)}"
        if pc.globalDefault:
            return "globalDefault", f"{name} cannot be the default class"
    elif value > HIGHEST_USER_PRIORITY:
        return "value", f"must be at most {HIGHEST_USER_PRIORITY}, got {echo(value)}"
    if pc.preemptionPolicy is not None and pc.preemptionPolicy not in PREEMPTION_POLICIES:
        allowed = " or ".join(PREEMPTION_POLICIES)
        return "preemptionPolicy", f"must be {allowed}, got {echo(pc.preemptionPolicy)}"
    return None


def priority_class_values(objs: Iterable[tuple[str, PriorityClassObject]]) -> dict[str, int]:
    """name -> value, sorted by name; a later definition wins. Each class is checked as the API
    server checks it: its name a DNS-1123 subdomain, and the rules above."""
    result: dict[str, int] = {}
    for source, pc in objs:
        name = pc.metadata.name
        obj = f"PriorityClass/{echo(name, quote=False)}"
        check(dns1123_subdomain_problem, name, source=source, obj=obj, field="metadata.name")
        problem = _problem(pc)
        if problem is not None:
            field, message = problem
            raise InputError(message, source=source, obj=obj, field=field, code="priority-class")
        result[name] = pc.value
    return dict(sorted(result.items()))


def default_priority_class(classes: Iterable[tuple[str, int, bool]]) -> str | None:
    """Of the classes (name, value, `globalDefault`), the default: of several (a race the API
    server can lose), the one of lowest value, as the Priority admission plugin picks it (then
    the first name)."""
    defaults = sorted((value, name) for name, value, default in classes if default)
    return defaults[0][1] if defaults else None


def default_of(objs: Iterable[tuple[str, PriorityClassObject]]) -> str | None:
    return default_priority_class((pc.metadata.name, pc.value, pc.globalDefault) for _, pc in objs)


def non_preempting(objs: Iterable[tuple[str, PriorityClassObject]]) -> tuple[str, ...]:
    """Names of the PriorityClasses with `preemptionPolicy: Never`, sorted."""
    return tuple(sorted({pc.metadata.name for _, pc in objs if pc.preemptionPolicy == "Never"}))


def priority_classes_of(objs: Iterable[tuple[str, PriorityClassObject]]) -> PriorityClasses:
    """The classes as a JobSet's templates resolve them: values, the default and the never
    preempting ones, each read by the functions above (the controller reads the cluster's so)."""
    listed = list(objs)
    return PriorityClasses(
        priority_class_values(listed), default_of(listed), frozenset(non_preempting(listed))
    )
