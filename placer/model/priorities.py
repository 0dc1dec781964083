"""How a pod template's priority resolves, with the cluster's PriorityClasses as one object.

The Priority admission plugin gives a pod the value of the class it names or, naming none, of
the cluster's default class (`globalDefault`), else 0; a live object already carries the value
(`priority`). So parsing a JobSet needs two facts that always travel together, the classes'
values and which class is the default: `PriorityClasses`, read from a snapshot
(`ClusterSnapshot.priorities`), the live cluster, or a capacity catalog.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

__all__ = ["NO_PRIORITY_CLASSES", "PriorityClasses"]


@dataclass(frozen=True)
class PriorityClasses:
    values: Mapping[str, int] = field(default_factory=dict)
    """Class name -> value."""
    default: str | None = None
    """The class a template naming none gets (snapshots/priority_classes.default_priority_class
    picks it as admission does)."""

    def class_of(self, named: str | None) -> str | None:
        """The class a template naming `named` (or none) runs under."""
        return named or self.default

    def value_of(self, named: str | None) -> int | None:
        """Its value; None when that class is not known here."""
        name = self.class_of(named)
        return self.values.get(name) if name else None


NO_PRIORITY_CLASSES = PriorityClasses()
