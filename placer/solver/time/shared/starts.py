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

A JobSet with both kinds of child Jobs gets its domains from the reservation pass, and its
pods without an exclusive key are judged here, from the time its domains are free on
(`after`), off those domains (no other child Job enters one, its own neither): it starts at
the first time its pods have room and those domains are still free of every other use for its
whole run (another JobSet may be reserved there after the pass's start for it). Without this
it was told "now" round after round while its shared pods had no room, and "now" when they fit
no node at all rather than never. When its pods have room only after its domains' start, its
domains are found again from then (`domains_when_pods_fit`), so it is not told to wait for
its first domains to be free again while others are free from then. One whose shared pods fit
no node at all gets no domains from the pass (`never_beside_domains`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass

from placer.model.cluster import DomainReservation
from placer.model.plan import JobSetOutcome
from placer.model.workload import JobSetRequest
from placer.solver.context import PlacementContext
from placer.solver.time.reservations import Reservation
from placer.solver.time.shared.timeline import NodeTimeline
from placer.solver.time.units import Units

__all__ = [
    "MIXED_PASSES",
    "SharedStart",
    "domains_when_pods_fit",
    "has_mixed",
    "has_shared",
    "never_beside_domains",
    "only_shared",
    "shared_starts",
    "starts_beside",
]


@dataclass(frozen=True)
class SharedStart:
    """A waiting JobSet's expected start (seconds from now; None: never), and the running
    JobSets whose end on the nodes it is expected to take it waits for, the last to end first.
    `with_domains`: it has child Jobs with an exclusive key too, whose domains the reservation
    pass gave it (`after`), and this start is not before theirs."""

    start_s: float | None
    waits_for: tuple[str, ...] = ()
    with_domains: bool = False
    nodes: frozenset[str] = frozenset()
    """The nodes its pods are expected to take then."""


def only_shared(ctx: PlacementContext, jobset: JobSetRequest) -> bool:
    """Every child Job of `jobset` is without an exclusive key (and it has some)."""
    classes = ctx.classes_of(jobset)
    return bool(classes) and all(jc.exclusive_key is None for jc in classes)


def has_shared(ctx: PlacementContext, jobset: JobSetRequest) -> bool:
    """Some child Job of `jobset` is without an exclusive key."""
    return any(jc.exclusive_key is None for jc in ctx.classes_of(jobset))


def shared_starts(
    units: Units,
    order: Sequence[JobSetRequest],
    durations: Mapping[str, float],
    placed: Iterable[JobSetOutcome],
    held: Iterable[DomainReservation],
    after: Mapping[str, Reservation] | None = None,
    *,
    domains_free: bool = True,
    until: Collection[str] | None = None,
) -> dict[str, SharedStart]:
    """The expected start of each JobSet of `order` (queue order, none placed) with child Jobs
    without an exclusive key, behind `placed` (this plan's placed outcomes, running from now
    for their expected durations) and the reservations `held` (future starts of other JobSets).
    A JobSet with child Jobs of both kinds is judged only when `after` has its domains (the
    reservation pass's start for them, a number); its pods start no earlier, off them, and
    only while they are free of every other use (unless not `domains_free`: the pods alone,
    for `domains_when_pods_fit`). `until`: only the JobSets up to the last of these are
    judged (those after it change nothing for them)."""
    after = after or {}
    waiting = [
        js
        for js in order
        if only_shared(units.ctx, js)
        or (has_shared(units.ctx, js) and _start_of(after.get(js.key)) is not None)
    ]
    if until is not None:
        last = max((i for i, js in enumerate(waiting) if js.key in until), default=-1)
        waiting = waiting[: last + 1]
    if not waiting:
        return {}
    timeline = NodeTimeline(units, durations, placed, held)
    found: dict[str, SharedStart] = {}
    for js in waiting:
        domains = after.get(js.key)
        from_s = _start_of(domains) or 0.0
        nodes = frozenset(
            n
            for group in (domains.units.values() if domains is not None else ())
            for u in group
            for n in _nodes(units, u)
        )
        placed_at = timeline.place(
            js,
            units.ctx,
            durations[js.key],
            not_before=from_s,
            domains=nodes,
            domains_free=domains_free,
        )
        if placed_at is None and units.last_resort() is not units.ctx:
            # judged on the hosts with condition taints back, as `Units.candidate` does last
            placed_at = timeline.place(
                js,
                units.last_resort(),
                durations[js.key],
                back=True,
                not_before=from_s,
                domains=nodes,
                domains_free=domains_free,
            )
        mixed = domains is not None
        if placed_at is None:
            found[js.key] = SharedStart(None, with_domains=mixed)
        else:
            start, taken = placed_at
            found[js.key] = SharedStart(start, timeline.waited_for(taken, start), mixed, taken)
    return found


def _start_of(r: Reservation | None) -> float | None:
    return r.start_s if r is not None else None


def _nodes(units: Units, unit: tuple[str, str]) -> Iterable[str]:
    domain = units.domains.get(unit)
    return domain.nodes if domain is not None else ()


def never_beside_domains(
    units: Units, order: Sequence[JobSetRequest], durations: Mapping[str, float]
) -> frozenset[str]:
    """The JobSets of `order` with child Jobs of both kinds whose pods without an exclusive key
    fit no node even once every running JobSet ends: the reservation pass gives them no
    domains (held for a start that never comes, they closed those domains to the JobSets
    behind, round after round). One timeline for all of them: each is placed once the ones
    before it end, so only a JobSet that fits nowhere gets no start."""
    if not has_mixed(units.ctx, order):
        return frozenset()
    mixed = [js for js in order if has_shared(units.ctx, js) and not only_shared(units.ctx, js)]
    anywhere = {js.key: Reservation(js.key, 0.0, durations[js.key]) for js in mixed}
    found = shared_starts(units, mixed, durations, (), (), anywhere)
    return frozenset(k for k, start in found.items() if start.start_s is None)


MIXED_PASSES = 3
"""How many times domains are found at most for JobSets with child Jobs of both kinds (once,
then up to twice more from their pods' later starts: `domains_when_pods_fit`)."""


def domains_when_pods_fit(
    find: Callable[[Mapping[str, float]], Mapping[str, Reservation]],
    starts: Callable[[Mapping[str, Reservation], Collection[str] | None], dict[str, SharedStart]],
    *,
    whole_first: bool = True,
) -> tuple[Mapping[str, Reservation], dict[str, SharedStart]]:
    """Domains from `find` (given, per JobSet, a time its child Jobs with an exclusive key
    start no earlier than: `Candidate.not_before_s`), and the starts beside them of the pods
    without an exclusive key: `starts(domains, None)` as `shared_starts` judges them, and
    `starts(domains, asked)` for the pods alone of the JobSets `asked` (whether or not their
    domains are still free then: `shared_starts`'s `domains_free` and `until`).

    A JobSet with child Jobs of both kinds whose start is later than its domains' is asked
    again, for its pods alone, once per start of its domains; when those are later than its
    domains' start too, domains are found again from then, at most `MIXED_PASSES` times in
    all, and judged again. Without `whole_first` every JobSet is asked for its pods alone at
    once, and no starts are returned: the reservation phase needs no whole start, and judges
    once where it would judge twice.

    Why: domains found for the first time they are free were held for a start that does not
    come when the JobSet's other pods have no room until later, and it was told to wait until
    those domains were free again for its whole run from its pods' start (round 43), while
    other domains stood free from then. Each round only moves such starts later (whole
    seconds, as the schedule plans), and a later start may take other domains, beside which
    its pods are judged again. The pods alone are asked only when the whole start is late, so
    a round without such a JobSet judges once, as before."""
    not_before: dict[str, float] = {}
    asked: dict[str, float | None] = {}
    """JobSet -> its domains' start when its pods alone were last asked."""
    domains = find(not_before)
    found: dict[str, SharedStart] = {}
    for turn in range(MIXED_PASSES):
        late = set(domains)
        if whole_first:
            found = starts(domains, None)
            late = {
                k
                for k, s in found.items()
                if k in domains
                and _after(s, domains[k])
                and asked.get(k, -1.0) != _start_of(domains[k])
            }
        if not late or turn == MIXED_PASSES - 1:
            break
        alone = starts(domains, late)
        asked |= {k: _start_of(domains[k]) for k in late}
        later = {k: s.start_s for k, s in alone.items() if k in late and _after(s, domains[k])}
        if not later:
            break
        for k, t in later.items():
            not_before[k] = max(not_before.get(k, 0.0), float(math.ceil(t or 0.0)))
        domains = find(not_before)
    return domains, found


def starts_beside(
    units: Units,
    order: Sequence[JobSetRequest],
    durations: Mapping[str, float],
    placed: Iterable[JobSetOutcome],
    held: Iterable[DomainReservation],
    kept: Mapping[str, Reservation] | None = None,
) -> Callable[[Mapping[str, Reservation], Collection[str] | None], dict[str, SharedStart]]:
    """`domains_when_pods_fit`'s `starts` for estimates: `shared_starts` beside `placed` and
    `held`, the domains found joined by `kept` (reservations that stay as they are)."""
    placed, held = list(placed), list(held)

    def starts(
        domains: Mapping[str, Reservation], asked: Collection[str] | None
    ) -> dict[str, SharedStart]:
        return shared_starts(
            units,
            order,
            durations,
            placed,
            held,
            {**domains, **(kept or {})},
            domains_free=asked is None,
            until=asked,
        )

    return starts


def _after(start: SharedStart, domains: Reservation) -> bool:
    """The pods of a JobSet with child Jobs of both kinds start later than its domains."""
    return (
        start.with_domains
        and start.start_s is not None
        and start.start_s > (_start_of(domains) or 0.0)
    )


def has_mixed(ctx: PlacementContext, order: Sequence[JobSetRequest]) -> bool:
    """Some JobSet of `order` has child Jobs of both kinds."""
    return any(has_shared(ctx, js) and not only_shared(ctx, js) for js in order)
