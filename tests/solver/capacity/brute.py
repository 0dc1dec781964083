"""Brute force for capacity questions on small clusters, independent of the CP-SAT models.

Every exclusive child Job needs a domain of its key to itself that fits it alone (`ctx.fits`: the
shared notion of fit is not what these tests are about; the counting is). With required locality,
each (copy, replicated job) first picks an enclosing domain, every choice enumerated; then a
bipartite matching of child Jobs to domains decides. Only exclusive replicated jobs are supported.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence

import networkx as nx

from placer.model.cluster import ClusterSnapshot
from placer.model.options import SolveOptions
from placer.model.workload import JobSetRequest
from placer.solver.context import PlacementContext

__all__ = ["fits_together"]


def fits_together(
    snapshot: ClusterSnapshot, jobsets: Sequence[JobSetRequest], options: SolveOptions
) -> bool:
    """Can every child Job of every JobSet get its own fitting domain at once?"""
    ctx = PlacementContext(snapshot, jobsets, options)
    classes = ctx.job_classes
    assert all(jc.exclusive_key for jc in classes), "brute force handles exclusive jobs only"
    local = [jc for jc in classes if jc.rjob.required_topology]
    options_per_class = []
    for jc in local:
        level = jc.rjob.required_topology
        assert level is not None
        values = sorted({n.labels[level] for n in snapshot.nodes if level in n.labels})
        options_per_class.append(values)
    for choice in itertools.product(*options_per_class):
        within = {jc.index: v for jc, v in zip(local, choice, strict=True)}
        if _match(ctx, within):
            return True
    return False


def _inside(ctx: PlacementContext, nodes: Sequence[str], level: str, value: str) -> bool:
    return all(ctx.nodes[n].labels.get(level) == value for n in nodes)


def _match(ctx: PlacementContext, within: dict[int, str]) -> bool:
    graph = nx.Graph()
    jobs = []
    for jc in ctx.job_classes:
        key = jc.exclusive_key
        assert key is not None
        for i in range(jc.rjob.replicas):
            job = ("job", jc.index, i)
            jobs.append(job)
            graph.add_node(job)
            for d in ctx.domains(key):
                if not ctx.fits(jc, d):
                    continue
                level = jc.rjob.required_topology
                if (
                    jc.index in within
                    and level
                    and not _inside(ctx, d.nodes, level, within[jc.index])
                ):
                    continue
                graph.add_edge(job, ("domain", d.key, d.path))
    if not jobs:
        return True
    matching = nx.bipartite.maximum_matching(graph, top_nodes=jobs)
    return sum(1 for j in jobs if j in matching) == len(jobs)
