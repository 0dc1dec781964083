"""How a pod template's priority resolves, with the cluster's PriorityClasses as one object.

The Priority admission plugin gives a pod the value of the class it names or, naming none, of
the cluster's default class (`globalDefault`), else 0; a live object already carries the value
(`priority`). So parsing a JobSet needs facts that always travel together, the classes' values,
which class is the default and which never preempt: `PriorityClasses`, read from a snapshot
(`ClusterSnapshot.priorities`), the live cluster, or a capacity catalog.

The same plugin refuses to create a pod (k8s.io/kubernetes plugin/pkg/admission/priority,
`admitPod`, v1.36.3) that names a class the cluster lacks, or that states a `priority` or a
`preemptionPolicy` other than the one it computes from the class (a class's policy defaults to
`PreemptLowerPriority`; naming no class with no default class, 0 and `PreemptLowerPriority`).
A JobSet whose template does so is accepted, but its Jobs can never create a pod: planning it
would hold domains for pods that will never exist. `refusal` says why, when the classes were
read (a cluster always has some: none at all means they were not, and then nothing is judged);
`of_template`, which parsing calls for each pod template, refuses such a template by field.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass, field

from placer.model.errors import InputError
from placer.model.messages import echo

__all__ = [
    "NO_PRIORITY_CLASSES",
    "PREEMPTION_POLICIES",
    "PREEMPT_LOWER",
    "SYSTEM_PRIORITY_CLASSES",
    "PriorityClasses",
]

PREEMPT_LOWER = "PreemptLowerPriority"
"""The preemption policy a class states by default, and a pod naming no class gets."""

PREEMPTION_POLICIES = (PREEMPT_LOWER, "Never")
"""The two a PriorityClass or a pod may state."""

SYSTEM_PRIORITY_CLASSES = {
    "system-cluster-critical": 2_000_000_000,
    "system-node-critical": 2_000_001_000,
}
"""The only `system-` classes, with the values the API server gives them (neither a default):
every cluster has them."""

log = logging.getLogger(__name__)

_REFUSED = "the Priority admission plugin refuses such pods, so its Jobs could never create one"


@dataclass(frozen=True)
class PriorityClasses:
    values: Mapping[str, int] = field(default_factory=dict)
    """Class name -> value."""
    default: str | None = None
    """The class a template naming none gets (snapshots/priority_classes.default_priority_class
    picks it as admission does)."""
    non_preempting: frozenset[str] = frozenset()
    """Classes with `preemptionPolicy: Never`."""

    def class_of(self, named: str | None) -> str | None:
        """The class a template naming `named` (or none) runs under."""
        return named or self.default

    def value_of(self, named: str | None) -> int | None:
        """Its value; None when that class is not known here (the API server's own two classes
        always are: every cluster has them)."""
        name = self.class_of(named)
        if not name:
            return None
        return self.values.get(name, SYSTEM_PRIORITY_CLASSES.get(name))

    def refusal(
        self, named: str | None, priority: int | None, policy: str | None
    ) -> tuple[str, str] | None:
        """(the pod field, why) when admission would refuse a pod naming class `named` and
        stating `priority` and `policy` (None: unstated); None when it would admit it, or when
        the classes were not read."""
        if not self.values:
            return None
        values = {**SYSTEM_PRIORITY_CLASSES, **self.values}  # a description may leave them out
        name = self.class_of(named)
        if name is not None and name not in values:
            known = echo(", ".join(sorted(self.values)), quote=False)
            return (
                "priorityClassName",
                f"no PriorityClass {echo(name)} (known: {known}); {_REFUSED}",
            )
        value = values[name] if name is not None else 0
        whose = f"of PriorityClass {echo(name)}" if name else "of a pod naming no PriorityClass"
        if name is not None and named is None:
            whose += ", the cluster's default"
        if priority is not None and priority != value:
            return "priority", f"{priority} differs from {value}, the value {whose}; {_REFUSED}"
        computed = "Never" if name in self.non_preempting else PREEMPT_LOWER
        if policy is not None and policy != computed:
            return (
                "preemptionPolicy",
                f"{echo(policy)} differs from {computed}, the policy {whose}; {_REFUSED}",
            )
        return None

    def of_template(
        self,
        named: str | None,
        priority: int | None,
        policy: str | None,
        *,
        source: str,
        obj: str,
        field: str,
    ) -> int:
        """A pod template's priority: its own `priority` if set, else the value of its class
        or, naming none, of the default class, else 0; a template admission would refuse
        (`refusal`) is refused by field (`field` is the pod spec's path)."""
        refused = self.refusal(named, priority, policy)
        if refused is not None:
            raise InputError(refused[1], source=source, obj=obj, field=f"{field}.{refused[0]}")
        if priority is not None:
            return priority
        value = self.value_of(named)
        if value is not None:
            return value
        if named:
            log.warning(
                "%s: %s: %s.priorityClassName %r is unknown; using priority 0",
                source or "<input>",
                obj,
                field,
                named,
            )
        return 0


NO_PRIORITY_CLASSES = PriorityClasses()
