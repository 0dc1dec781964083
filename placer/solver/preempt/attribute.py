"""The victims a plan chose, said in the plan: who preempts whom, and at what cost.

Phase "materialize" of the CP-SAT planner with preemption. Attribution is read off the plan
itself, not the model: a placed JobSet preempts every chosen victim running on a node it uses or
inside a domain it takes whole. A chosen victim that no placed JobSet ends up needing is not
evicted (the plan is valid without evicting it, so evicting it would only lose work).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from placer.model.cluster import ClusterSnapshot, Node
from placer.model.plan import JobSetOutcome, Plan, PreemptedJobSet
from placer.solver.preempt.candidates import Victims

__all__ = ["attribute_preemptions", "nodes_by_label", "nodes_used"]


def nodes_used(outcome: JobSetOutcome, by_label: Mapping[tuple[str, str], list[Node]]) -> set[str]:
    """Nodes a placed JobSet occupies: its pods' nodes and every node of the exclusive domains
    its child Jobs take (a domain taken whole must be free of anyone else); `by_label` is
    (label, value) -> nodes carrying it, for the labels domains pin."""
    used = {p.node for j in outcome.jobs for p in j.pods}
    for j in outcome.jobs:
        if j.domain is None:
            continue
        pins = dict(j.domain.path)
        pins[j.domain.key] = j.domain.value
        members = by_label.get((j.domain.key, j.domain.value), [])
        used.update(n.name for n in members if all(n.labels.get(k) == v for k, v in pins.items()))
    return used


def nodes_by_label(snapshot: ClusterSnapshot, plan: Plan) -> dict[tuple[str, str], list[Node]]:
    """(label, value) -> the nodes carrying it, for the labels the plan's domains pin."""
    keys = {j.domain.key for o in plan.jobsets for j in o.jobs if j.domain is not None}
    found: dict[tuple[str, str], list[Node]] = {}
    for n in snapshot.nodes:
        for k in keys:
            if k in n.labels:
                found.setdefault((k, n.labels[k]), []).append(n)
    return found


def _victims_of(
    outcome: JobSetOutcome, by_label: Mapping[tuple[str, str], list[Node]], victims: Victims
) -> set[str]:
    found = {v for n in nodes_used(outcome, by_label) for v in victims.on_node.get(n, ())}
    return found - {outcome.key}  # a JobSet moved (defrag) does not make room for itself


def attribute_preemptions(plan: Plan, snapshot: ClusterSnapshot, victims: Victims) -> Plan:
    """`plan` with each placed JobSet's `preempts` and the `preempted` entries of the victims
    some placed JobSet needs; `snapshot` is the one before any eviction."""
    by_label = nodes_by_label(snapshot, plan)
    beneficiaries: dict[str, list[str]] = {}
    outcomes: list[JobSetOutcome] = []
    for o in plan.jobsets:
        if o.status != "placed":
            outcomes.append(o)
            continue
        mine = sorted(_victims_of(o, by_label, victims))
        for v in mine:
            beneficiaries.setdefault(v, []).append(o.key)
        outcomes.append(o.model_copy(update={"preempts": mine}) if mine else o)
    preempted = [_entry(victims, key, sorted(who)) for key, who in sorted(beneficiaries.items())]
    return plan.model_copy(update={"jobsets": outcomes, "preempted": preempted})


def _entry(victims: Victims, key: str, who: Iterable[str]) -> PreemptedJobSet:
    c = victims.candidates[key]
    namespace, _, name = key.partition("/")
    return PreemptedJobSet(
        namespace=namespace,
        name=name,
        priority=c.priority,
        accelerators=c.cost.accelerators,
        lost_chip_hours=c.cost.lost_chip_hours,
        restart_chip_hours=c.cost.accelerators * c.cost.restart_s / 3600.0,
        makes_room_for=list(who),
    )
