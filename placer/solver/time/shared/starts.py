"""When a waiting JobSet whose pods have no exclusive key can start: node by node, over time.

The reservation pass works on domains, and a JobSet with no exclusive child Job needs none, so
the pass found it "able to start now" whatever the cluster held: left out of the plan, such a
JobSet was told expected start 0 ("now" in the table), round after round, and one whose pods fit
no node even on an empty cluster was never told "never" (so never Rejected under Kueue).

Here each node's room is followed over time instead: its free resources once every JobSet ends
(`Units.ctx`), less what uses it over a window `[t, t + duration)`:

- a running JobSet until its expected end (`ReleaseTimeline`; its whole node when its usage was
  not recorded), a NotReady or cordoned host until it is expected back (`UNHEALTHY_BACK_S`);
- this plan's pods without an exclusive key, for their JobSet's expected duration, and its
  exclusive child Jobs' domains whole (no other child Job enters one: the ledger's rule);
- a domain reserved for another JobSet's later start, whole, over its reservation (the rule of
  `PlacementContext.node_open_to`);
- the JobSets of this kind ahead in queue order, where they are expected to run.

The earliest start is 0 or the end of some use, so those are the only times tried. For each pod
shape the pods fitting on its eligible nodes are summed at each such time, and the JobSet is
packed first-fit, as the ledger packs it, only at times where every shape's sum holds it. No time
fits: it never fits, and why comes from the cluster it was judged on last (`Units.last_resort`),
as for JobSets with exclusive child Jobs.

The node layout, and why it counts kinds of nodes rather than nodes, is `shared.timeline`'s.

A JobSet with both kinds of child Jobs keeps the reservation pass's estimate (its domains'),
which does not look at its shared pods.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from placer.model.cluster import DomainReservation
from placer.model.plan import JobSetOutcome
from placer.model.workload import JobSetRequest
from placer.solver.context import PlacementContext
from placer.solver.time.shared.timeline import NodeTimeline
from placer.solver.time.units import Units

__all__ = ["SharedStart", "only_shared", "shared_starts"]


@dataclass(frozen=True)
class SharedStart:
    """A waiting JobSet's expected start (seconds from now; None: never), and the running
    JobSets whose end on the nodes it is expected to take it waits for, the last to end first."""

    start_s: float | None
    waits_for: tuple[str, ...] = ()


def only_shared(ctx: PlacementContext, jobset: JobSetRequest) -> bool:
    """Every child Job of `jobset` is without an exclusive key (and it has some)."""
    classes = ctx.classes_of(jobset)
    return bool(classes) and all(jc.exclusive_key is None for jc in classes)


def shared_starts(
    units: Units,
    order: Sequence[JobSetRequest],
    durations: Mapping[str, float],
    placed: Iterable[JobSetOutcome],
    held: Iterable[DomainReservation],
) -> dict[str, SharedStart]:
    """The expected start of each JobSet of `order` (queue order, none placed) whose child Jobs
    all lack an exclusive key, behind `placed` (this plan's placed outcomes, running from now
    for their expected durations) and the reservations `held` (future starts of other JobSets)."""
    waiting = [js for js in order if only_shared(units.ctx, js)]
    if not waiting:
        return {}
    timeline = NodeTimeline(units, durations, placed, held)
    found: dict[str, SharedStart] = {}
    for js in waiting:
        placed_at = timeline.place(js, units.ctx, durations[js.key])
        if placed_at is None and units.last_resort() is not units.ctx:
            # judged on the hosts with condition taints back, as `Units.candidate` does last
            placed_at = timeline.place(js, units.last_resort(), durations[js.key], back=True)
        if placed_at is None:
            found[js.key] = SharedStart(None)
        else:
            start, nodes = placed_at
            found[js.key] = SharedStart(start, timeline.waited_for(nodes, start))
    return found
