"""The checker's preemption rules: the plan evicts only what it may, and uses only what it evicts.

Judged from the snapshot and the plan alone, like the rest of the checker (no solver code):
- preemption is allowed at all (`--preemption` not `none`) when the plan evicts anyone;
- every victim runs on the snapshot, is not annotated `placer.dev/preemptible: "false"`, has a
  known priority strictly lower than every JobSet it makes room for, and none of those states
  `preemptionPolicy: Never`;
- victims are whole: the rest of the checker judges nodes with every victim's pods gone
  (`without_victims`), never a part of one;
- with `placer defrag` victims are moves instead: each is given and placed again elsewhere, of
  any priority, and makes room only for JobSets that are not moved themselves;
- a placed JobSet uses a victim's node (a pod on it, or an exclusive domain holding it) only if it
  lists that victim in `preempts`, and lists only victims whose nodes it uses; each victim's
  `makes_room_for` is exactly who lists it, never empty.
"""

from __future__ import annotations

from collections.abc import Mapping

from placer.model.cluster import ClusterSnapshot, Node
from placer.model.options import SolveOptions
from placer.model.plan import JobSetOutcome, Plan
from placer.model.whatif import running_priority, without_jobsets
from placer.model.workload import JobSetRequest

__all__ = ["check_preemptions", "without_victims"]


def without_victims(plan: Plan, snapshot: ClusterSnapshot) -> ClusterSnapshot:
    """The snapshot with every victim of the plan gone, whole (all its pods, everywhere)."""
    if not plan.preempted:
        return snapshot
    return without_jobsets(snapshot, {p.key for p in plan.preempted})[0]


def _used_nodes(o: JobSetOutcome, by_label: Mapping[tuple[str, str], list[Node]]) -> set[str]:
    """Its pods' nodes, and every node of each exclusive domain it takes."""
    used = {p.node for j in o.jobs for p in j.pods}
    for j in o.jobs:
        if j.domain is not None:
            pins = {**dict(j.domain.path), j.domain.key: j.domain.value}
            members = by_label.get((j.domain.key, j.domain.value), [])
            used.update(
                n.name for n in members if all(n.labels.get(k) == v for k, v in pins.items())
            )
    return used


def _domain_index(snapshot: ClusterSnapshot, plan: Plan) -> dict[tuple[str, str], list[Node]]:
    """(domain key, value) -> nodes carrying it, for the keys the plan's domains use."""
    keys = {j.domain.key for o in plan.jobsets for j in o.jobs if j.domain is not None}
    found: dict[tuple[str, str], list[Node]] = {}
    for n in snapshot.nodes:
        for k in keys & n.labels.keys():
            found.setdefault((k, n.labels[k]), []).append(n)
    return found


def _never(js: JobSetRequest, snapshot: ClusterSnapshot) -> bool:
    return js.never_preempts or (js.priority_class_name or "") in snapshot.non_preempting_classes


def check_preemptions(
    plan: Plan,
    snapshot: ClusterSnapshot,
    given: Mapping[str, JobSetRequest],
    options: SolveOptions,
    problems: set[str],
) -> None:
    """Add a line to `problems` for every preemption rule the plan breaks (see the module)."""
    if not plan.preempted and not any(o.preempts for o in plan.jobsets):
        return  # nothing evicted: the rest of the checker judges the plan as it always did
    nodes = {n.name: n for n in snapshot.nodes}
    by_label = _domain_index(snapshot, plan)
    victims = {p.key: p for p in plan.preempted}
    listed: dict[str, set[str]] = {}
    for o in plan.jobsets:
        mine = set(o.preempts)
        if o.preempts and o.status != "placed":
            problems.add(f"{o.key}: preempts {', '.join(o.preempts)} but is not placed")
        running_there = {
            j for n in _used_nodes(o, by_label) if n in nodes for j in nodes[n].jobsets
        }
        for v in sorted(mine - running_there):
            problems.add(f"{o.key}: preempts {v} but uses none of its nodes")
        for v in sorted((running_there & victims.keys()) - mine):
            problems.add(f"{o.key}: uses nodes of preempted {v} without listing it in preempts")
        for v in mine:
            listed.setdefault(v, set()).add(o.key)
            if v not in victims:
                problems.add(f"{o.key}: preempts {v}, which the plan does not list as preempted")
    if victims and not options.preemption.active:
        problems.add(f"preempts {', '.join(sorted(victims))} with --preemption none")
    moves = options.preemption.mode == "defrag"
    for key, p in victims.items():
        _check_victim(key, p.makes_room_for, listed.get(key, set()), snapshot, given, problems)
        if moves:
            _check_move(key, plan, given, problems)
            for mover in sorted(listed.get(key, set()) & victims.keys()):
                problems.add(f"{mover}: moved onto what moving {key} frees")
        else:
            _check_priority(key, listed.get(key, set()), snapshot, given, problems)


def _check_move(
    key: str, plan: Plan, given: Mapping[str, JobSetRequest], problems: set[str]
) -> None:
    """Defrag: a moved JobSet is given (its manifest says how to re-place it) and placed again;
    it makes room for pending JobSets only, never for another moved one."""
    if key not in given:
        problems.add(f"{key}: moved but not given, so it cannot be placed again")
        return
    if plan.outcome(key).status != "placed":
        problems.add(f"{key}: moved but not placed again")


def _check_victim(
    key: str,
    makes_room_for: list[str],
    listed_by: set[str],
    snapshot: ClusterSnapshot,
    given: Mapping[str, JobSetRequest],
    problems: set[str],
) -> None:
    """One victim: running, not protected, and preempted by exactly who it says."""
    if not any(key in n.jobsets for n in snapshot.nodes):
        problems.add(f"{key}: preempted but not running on the cluster")
        return
    if set(makes_room_for) != listed_by or not listed_by:
        problems.add(
            f"{key}: makes room for {makes_room_for or 'nobody'} but is preempted by "
            f"{sorted(listed_by) or 'nobody'}"
        )
    info = snapshot.running.get(key)
    if info is not None and not info.preemption.preemptible:
        problems.add(f"{key}: preempted but annotated placer.dev/preemptible: false")


def _check_priority(
    key: str,
    listed_by: set[str],
    snapshot: ClusterSnapshot,
    given: Mapping[str, JobSetRequest],
    problems: set[str],
) -> None:
    """A victim's known priority is below each of its preemptors', none of them `Never`."""
    priority = running_priority(snapshot, key)
    if priority is None:
        problems.add(f"{key}: preempted but its priority is unknown")
        return
    for who in sorted(listed_by):
        js = given.get(who)
        if js is None:
            continue
        if priority >= js.reported_priority:
            problems.add(
                f"{key}: priority {priority} preempted by {who} of priority {js.reported_priority}"
            )
        if _never(js, snapshot):
            problems.add(f"{who}: preempts {key} but its preemptionPolicy is Never")
