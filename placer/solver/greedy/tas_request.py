"""What one PodSet asks of Kueue's TAS search: its pod count and topology request.

Apart from `tas_search` (the search's entry points) and `tas_phases` (one run of its phases)
because both read it: in either one, the other had to import it back, which only a
`TYPE_CHECKING` import kept from being a cycle.
"""

from __future__ import annotations

from dataclasses import dataclass

from placer.model.workload import ReplicatedJobRequest

__all__ = ["TasRequest"]


@dataclass(frozen=True)
class TasRequest:
    """Kueue's topology request of one PodSet (a whole replicated job of a JobSet)."""

    count: int
    level: str | None
    """Required or preferred level; None for unconstrained or slice-only requests."""
    required: bool = False
    unconstrained: bool = False
    slice_level: str | None = None
    slice_size: int = 1

    @classmethod
    def of(cls, rjob: ReplicatedJobRequest) -> TasRequest:
        return cls(
            count=rjob.pod_count,
            level=rjob.required_topology or rjob.preferred_topology,
            required=rjob.required_topology is not None,
            unconstrained=rjob.unconstrained
            or not (rjob.required_topology or rjob.preferred_topology),
            slice_level=rjob.slice_topology,
            slice_size=rjob.slice_size or 1,
        )
