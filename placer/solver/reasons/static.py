"""What the cluster alone says about one domain for one child Job: big enough, every node breaking
one rule of the pod (nodeSelector, node affinity, taint: the most common is named), or too small,
with why (hosts not matching, NotReady, cordoned, a resource or host port in use, too few hosts).

The classifier (classify.py) asks once per kind of domain and pod shape; a running JobSet's hold
and the plan come on top there.
"""

from __future__ import annotations

from collections import Counter

from placer.model.cluster import Node
from placer.model.topology import Domain
from placer.solver.context import JobClass, PlacementContext
from placer.solver.reasons.data import HostCause, HostCauseKind, Reason
from placer.solver.reasons.nodes import empty_capacity, health_kind, limiting, node_rule, rule_kind

__all__ = ["judge_domain"]


def judge_domain(ctx: PlacementContext, jc: JobClass, domain: Domain) -> Reason | None:
    """Rule (every node breaks one), too small (with why), or None when one child Job fits."""
    need = jc.rjob.pods_per_job
    fits = ctx.domain_capacity(jc, domain)
    if fits >= need:
        return None
    pod = jc.rjob.pod
    facts = ctx.class_facts(jc)
    nodes = [ctx.nodes[n] for n in domain.nodes]
    rules = [node_rule(ctx, n, pod, facts) for n in nodes]
    if rules and all(rules):
        counts = Counter(r for r in rules if r)
        rule = min(counts, key=lambda r: (-counts[r], r))
        return Reason(rule_kind(rule), rule=rule)
    causes: Counter[tuple[HostCauseKind, str]] = Counter()
    eligible: list[Node] = []
    for n, broken in zip(nodes, rules, strict=True):
        health = health_kind(n)
        if broken:
            causes[(rule_kind(broken), broken)] += 1
        elif health is not None:
            causes[(health, "")] += 1
        else:
            eligible.append(n)
            if facts.raw(n.name) < empty_capacity(n, pod):
                causes[("in-use", limiting(n.free, set(n.used_host_ports), pod))] += 1
    if not causes:
        limits = Counter(limiting(n.free, set(n.used_host_ports), pod) for n in eligible)
        limit = min(limits, key=lambda s: (-limits[s], s)) if limits else "eligible nodes"
        causes[("short", limit)] = len(eligible)
    hosts = sorted((HostCause(k, w, c) for (k, w), c in causes.items()), key=_most_first)
    return Reason("too-small", fits=fits, needed=need, hosts=tuple(hosts))


def _most_first(cause: HostCause) -> tuple[int, HostCause]:
    return (-cause.hosts, cause)
