"""The writes that bind placed JobSets to their nodes, one group per binding. Pure.

`writeplan.plan_writes` calls these for the records in force, after each JobSet's record and
`Placed` event (the order that makes a crash resumable is decided there, not here). Gate binding:
`pod_writes` ungates each gated pod of a JobSet with its child Job's node-affinity requirements
(`Hostnames` reads the nodes' hostname labels once per cycle for that). Node-labels binding:
`node_writes` labels the nodes of every record (a node only once no other child Job's pods run on
it) and clears placer's label from the nodes no record holds (once the child Job it names has no
pods running there). Each write is computed against the observed object: a pod or node already as
intended gets none, so a rerun writes only what is missing.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence

from placer.controller.decide.observe.domains import DomainIndex
from placer.controller.decide.observe.state import ClusterState
from placer.controller.decide.observe.survey import ManagedJobSet
from placer.controller.decide.records.bindings import (
    LABELED_BY_ANNOTATION,
    job_requirements,
    namespaced_job,
    node_label_patch,
    ungate_patch,
)
from placer.controller.decide.records.writes import LabelNode, UngatePod, Write
from placer.model.assignment import Assignment
from placer.model.kube.pods import JOB_NAME_LABEL
from placer.model.snapshots.running import TERMINAL_PHASES
from placer.model.topology import HOSTNAME
from placer.model.workload import JOBSET_NAME_LABEL

__all__ = ["Hostnames", "node_writes", "pod_writes"]

log = logging.getLogger(__name__)


class Hostnames:
    """node name -> its `kubernetes.io/hostname` label, read once per cycle and only when a record
    pins nodes (or has child Jobs without a domain): every node of the cache is read."""

    def __init__(self, state: ClusterState) -> None:
        self._state = state
        self._found: dict[str, str] | None = None

    def of(self, record: Assignment) -> Mapping[str, str]:
        if not record.pinned and all(j.domain is not None for j in record.jobs.values()):
            return {}
        if self._found is None:
            self._found = {
                n: (o["metadata"].get("labels") or {}).get(HOSTNAME, n)
                for n, o in self._state.nodes.items()
            }
        return self._found


def pod_writes(ms: ManagedJobSet, record: Assignment, hostnames: Hostnames) -> list[Write]:
    """Gate binding: one `UngatePod` per live, gated pod of `ms`'s current restart, with the
    requirements of its child Job in `record`."""
    key, namespace = ms.key, ms.namespace
    writes: list[Write] = []
    for p in ms.pods:
        if p.terminal or p.deleting or not p.gated or p.ref.restart_attempt < ms.restarts:
            continue
        job = record.jobs.get(p.ref.job_name)
        if job is None:
            log.warning(
                "%s: pod %s belongs to %s, which the record does not know",
                key,
                p.name,
                p.ref.job_name,
            )
            continue
        reqs = job_requirements(job, p.ref.completion_index, hostnames=hostnames.of(record))
        patch = ungate_patch(p.pod, reqs)
        if patch is not None:
            writes.append(
                UngatePod(
                    jobset=key,
                    namespace=namespace,
                    name=p.name,
                    uid=str(p.pod["metadata"].get("uid") or ""),
                    job=p.ref.job_name,
                    requirements=tuple(reqs),
                    patch=patch,
                )
            )
    return writes


def _running_jobs(state: ClusterState) -> dict[str, set[str]]:
    """node -> `<namespace>_<job>` of JobSet child Jobs with non-terminal pods bound there."""
    result: dict[str, set[str]] = {}
    for (ns, _), pod in state.pods.items():
        node = (pod.get("spec") or {}).get("nodeName")
        labels = (pod.get("metadata") or {}).get("labels") or {}
        if not node or (pod.get("status") or {}).get("phase") in TERMINAL_PHASES:
            continue
        if JOBSET_NAME_LABEL in labels and JOB_NAME_LABEL in labels:
            result.setdefault(node, set()).add(namespaced_job(ns, labels[JOB_NAME_LABEL]))
    return result


def node_writes(
    records: Sequence[tuple[str, Assignment]],
    state: ClusterState,
    index: DomainIndex,
    namespaces: tuple[str, ...],
) -> list[Write]:
    """Node-labels binding: a `LabelNode` per node of `records` (`(JobSet key, record)`) not yet
    labeled for its child Job, then one clearing each node placer labeled that no record holds
    (within `namespaces`, when given)."""
    running = _running_jobs(state)
    wanted: dict[str, tuple[str, str]] = {}
    for key, record in records:
        namespace = key.split("/", 1)[0]
        for name, job in record.jobs.items():
            value = namespaced_job(namespace, name)
            for node in index.job_nodes(job):
                if node in wanted and wanted[node][1] != value:
                    log.error(
                        "node %s is recorded for both %s and %s; keeping the first",
                        node,
                        wanted[node][1],
                        value,
                    )
                    continue
                wanted[node] = (key, value)
    writes: list[Write] = []
    for node, (key, value) in sorted(wanted.items()):
        obj = state.nodes.get(node)
        if obj is None:
            continue
        others = sorted(running.get(node, set()) - {value})
        if others:
            log.info(
                "node %s still runs pods of %s; not labeling it for %s yet", node, others[0], value
            )
            continue
        patch = node_label_patch(obj, value)
        if patch is not None:
            writes.append(LabelNode(jobset=key, name=node, value=value, patch=patch))
    for node, obj in sorted(state.nodes.items()):
        meta = obj.get("metadata") or {}
        mark = (meta.get("annotations") or {}).get(LABELED_BY_ANNOTATION)
        if node in wanted or mark is None:
            continue
        if namespaces and mark.split("_", 1)[0] not in namespaces:
            continue
        if mark in running.get(node, set()):
            continue
        patch = node_label_patch(obj, None)
        if patch is not None:
            writes.append(LabelNode(name=node, value=None, patch=patch))
    return writes
