"""Reading Kueue for placer's AdmissionCheck: which Workloads wait for placer, and for which JobSet.

Kueue admits a Workload only when every AdmissionCheck its ClusterQueue lists is Ready. Placer's
check is an `AdmissionCheck` whose `spec.controllerName` is `placer.dev/placement`; after Kueue
reserves quota, the Workload carries an entry for it in `status.admissionChecks[]`. This module
reads those objects into plain values (`read_kueue`), pure over a `ClusterState`:

- placer's checks: AdmissionChecks naming placer's controller. One with `spec.parameters` is
  refused (placer has no parameters kind): a Warning event on it, its Workloads' checks untouched.
- one `KueueWorkload` per Workload with an entry for one of placer's checks: its JobSet (the
  owner reference of kind JobSet), its stage (`Stage`), its priority and since when its quota is
  reserved. A Workload placer cannot serve (no owner, an owner of another kind, PodSets that are
  not the JobSet's replicatedJobs) gets a Warning event and its check is left as it is.
- Kueue's spelling of topology: a JobSet whose templates carry `kueue.x-k8s.io/podset-*`
  topology annotations; on a flavor without `topologyName` Kueue never reserves its quota ("does
  not support TopologyAwareScheduling"). A Warning on the Workload says to write them as
  `placer.dev/podset-*`, which placer reads the same way (`KUEUE_SPELLING`).
- TAS conflicts: a ClusterQueue listing placer's check on a ResourceFlavor with `topologyName`
  (Kueue's own Topology-Aware Scheduling would place the same pods): a Warning on the ClusterQueue.

Kueue names a JobSet's PodSets after its replicatedJobs, each PodSet counting replicas x pods per
child Job; that is the mapping checked here.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from placer.controller.adapter import Obj
from placer.controller.decide.observe.state import ClusterState, Key
from placer.model.assignment import PREFIX
from placer.model.durations import parse_rfc3339
from placer.model.errors import InputError
from placer.model.kueue.annotations import kueue_spelled
from placer.model.kueue.workload import condition_true, owner_of
from placer.model.workload import JobSetRequest

__all__ = [
    "CONTROLLER_NAME",
    "KUEUE_SPELLING",
    "KueueEvent",
    "KueueView",
    "KueueWorkload",
    "Stage",
    "check_entry",
    "condition_true",
    "kueue_event",
    "pod_set_problem",
    "read_kueue",
    "tas_conflicts",
]

CONTROLLER_NAME = f"{PREFIX}/placement"
"""`spec.controllerName` of placer's AdmissionChecks."""

KUEUE_SPELLING = (
    "Kueue reserves no quota for kueue.x-k8s.io/podset-* topology annotations on a flavor "
    "without topologyName, as placer's check uses: write them as placer.dev/podset-*, which "
    "placer reads the same way"
)
"""What placer says of a JobSet whose topology is in Kueue's spelling (`kueue_spelled`)."""

Stage = Literal["waiting", "pending", "ready", "retry", "rejected"]
"""Where a Workload stands for placer: `waiting` for quota (none reserved, or evicted),
`pending` (quota reserved, placer's check Pending: placer decides), `ready` (placer's check
Ready), `retry` or `rejected` (placer gave the quota back)."""


@dataclass(frozen=True)
class KueueEvent:
    """A Warning (or Normal) event on a Kueue object: a Workload, AdmissionCheck or ClusterQueue."""

    kind: str
    namespace: str
    name: str
    reason: str
    message: str
    body: Obj


@dataclass(frozen=True)
class KueueWorkload:
    """One Workload under placer's check."""

    namespace: str
    name: str
    uid: str
    resource_version: str
    jobset: str
    """`namespace/name` of the owner JobSet."""
    check: str
    """The name of placer's AdmissionCheck on it."""
    stage: Stage
    entry: Mapping[str, Any]
    """Its current `status.admissionChecks[]` entry for placer's check."""
    priority: int | None
    """`spec.priority` (Kueue's resolved priority), None when unset."""
    reserved_since: float | None
    """Epoch seconds of the QuotaReserved condition's last transition, while quota is reserved."""
    pod_sets: tuple[str, ...]

    @property
    def key(self) -> Key:
        return (self.namespace, self.name)


@dataclass(frozen=True)
class KueueView:
    checks: frozenset[str] = frozenset()
    """Names of placer's AdmissionChecks in use."""
    workloads: Mapping[str, KueueWorkload] = field(default_factory=dict)
    """JobSet key -> its Workload under placer's check."""
    events: tuple[KueueEvent, ...] = ()
    """Warnings for objects placer cannot serve."""


def _condition_time(obj: Mapping[str, Any], kind: str) -> float | None:
    for c in (obj.get("status") or {}).get("conditions") or []:
        if isinstance(c, Mapping) and c.get("type") == kind and c.get("status") == "True":
            text = c.get("lastTransitionTime")
            if isinstance(text, str):
                try:
                    return parse_rfc3339(text, field="lastTransitionTime").timestamp()
                except InputError:
                    return None
    return None


def check_entry(workload: Mapping[str, Any], names: frozenset[str]) -> Mapping[str, Any] | None:
    """The first `status.admissionChecks[]` entry naming one of `names`."""
    for entry in (workload.get("status") or {}).get("admissionChecks") or []:
        if isinstance(entry, Mapping) and entry.get("name") in names:
            return entry
    return None


def kueue_event(
    obj: Mapping[str, Any], kind: str, *, reason: str, message: str, now: str, type_: str
) -> KueueEvent:
    """An Event on a Kueue object, named after what it says (created once however often a
    cycle repeats it). Events of cluster-scoped objects go to namespace `default`."""
    meta = obj.get("metadata") or {}
    name = str(meta.get("name") or "")
    namespace = str(meta.get("namespace") or "")
    digest = hashlib.sha1(f"{meta.get('uid')}\0{reason}\0{message}".encode()).hexdigest()[:16]
    involved: dict[str, Any] = {
        "apiVersion": obj.get("apiVersion") or "kueue.x-k8s.io/v1beta2",
        "kind": kind,
        "name": name,
        "uid": meta.get("uid") or "",
    }
    if namespace:
        involved["namespace"] = namespace
    body = {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": f"{name}.{digest}", "namespace": namespace or "default"},
        "involvedObject": involved,
        "reason": reason,
        "message": message[:1024],
        "type": type_,
        "source": {"component": f"{PREFIX}/controller"},
        "firstTimestamp": now,
        "lastTimestamp": now,
        "count": 1,
    }
    return KueueEvent(kind, namespace or "default", name, reason, message, body)


def _placer_checks(
    state: ClusterState, now: str
) -> tuple[frozenset[str], frozenset[str], list[KueueEvent]]:
    """(usable check names, refused check names, warnings)."""
    usable, refused, events = set(), set(), []
    for name, ac in sorted(state.admission_checks.items()):
        spec = ac.get("spec") or {}
        if spec.get("controllerName") != CONTROLLER_NAME:
            continue
        params = spec.get("parameters")
        if params:
            refused.add(name)
            message = (
                f"AdmissionCheck {name}: spec.parameters {dict(params)} is not supported "
                f"(placer's check takes no parameters); its Workloads' checks are left as they are"
            )
            events.append(
                kueue_event(
                    ac,
                    "AdmissionCheck",
                    reason="UnsupportedParameters",
                    message=message,
                    now=now,
                    type_="Warning",
                )
            )
        else:
            usable.add(name)
    return frozenset(usable), frozenset(refused), events


def pod_set_problem(workload: Mapping[str, Any], request: JobSetRequest) -> str:
    """Why the Workload's PodSets are not the JobSet's replicatedJobs, or ""."""
    pod_sets = {
        str(p.get("name")): p
        for p in (workload.get("spec") or {}).get("podSets") or []
        if isinstance(p, Mapping)
    }
    rjobs = {rj.name: rj for rj in request.replicated_jobs}
    if set(pod_sets) != set(rjobs):
        return (
            f"spec.podSets {sorted(pod_sets)} are not the replicatedJobs {sorted(rjobs)} of "
            f"JobSet {request.key}"
        )
    for name, rj in sorted(rjobs.items()):
        count = pod_sets[name].get("count")
        if count != rj.pod_count:
            return (
                f"spec.podSets[{name}].count is {count}, JobSet {request.key} runs "
                f"{rj.pod_count} pods in replicatedJob {name}"
            )
    return ""


def _stage(workload: Mapping[str, Any], entry: Mapping[str, Any]) -> Stage:
    if condition_true(workload, "Evicted") or not condition_true(workload, "QuotaReserved"):
        return "waiting"
    state = entry.get("state")
    if state == "Ready":
        return "ready"
    if state == "Retry":
        return "retry"
    if state == "Rejected":
        return "rejected"
    return "pending"


def read_kueue(
    state: ClusterState,
    requests: Mapping[str, JobSetRequest | None],
    *,
    now: str,
    namespaces: Sequence[str] = (),
) -> KueueView:
    """Placer's checks, the Workloads under them (by JobSet key), and warnings for what placer
    cannot serve. `requests`: the managed JobSets' parsed requests by key (None: unparsable);
    a Workload whose JobSet placer does not manage is warned about, never decided on."""
    checks, refused, events = _placer_checks(state, now)
    workloads: dict[str, KueueWorkload] = {}
    for (ns, name), wl in sorted(state.workloads.items()):
        if namespaces and ns not in namespaces:
            continue
        if condition_true(wl, "Finished") or check_entry(wl, refused) is not None:
            continue
        entry = check_entry(wl, checks)
        if entry is None:
            continue
        problem, jobset = "", ""
        owner = owner_of(wl)
        if owner is None:
            problem = "no owner reference: placer plans only Workloads of a JobSet"
        elif owner[0] != "JobSet":
            problem = f"owned by a {owner[0]} ({owner[1]}): placer plans only JobSets"
        else:
            jobset = f"{ns}/{owner[1]}"
            if (ns, owner[1]) not in state.jobsets:
                continue  # not seen yet, or being deleted: nothing to decide
            if jobset not in requests:
                problem = (
                    f"JobSet {jobset} is not managed by placer (no placer.dev/placement "
                    "scheduling gate in its pod templates)"
                )
            elif (request := requests[jobset]) is not None:
                problem = pod_set_problem(wl, request)
                if not problem and (spelled := kueue_spelled(request)):
                    events.append(_spelling_event(wl, ns, name, spelled, now))
        if problem:
            message = f"Workload {ns}/{name}: {problem}; check {entry.get('name')} left as it is"
            events.append(
                kueue_event(
                    wl,
                    "Workload",
                    reason="NotPlaceable",
                    message=message,
                    now=now,
                    type_="Warning",
                )
            )
            continue
        stage = _stage(wl, entry)
        priority = (wl.get("spec") or {}).get("priority")
        meta = wl.get("metadata") or {}
        workloads[jobset] = KueueWorkload(
            namespace=ns,
            name=name,
            uid=str(meta.get("uid") or ""),
            resource_version=str(meta.get("resourceVersion") or ""),
            jobset=jobset,
            check=str(entry.get("name")),
            stage=stage,
            entry=entry,
            priority=priority if isinstance(priority, int) else None,
            reserved_since=_condition_time(wl, "QuotaReserved") if stage != "waiting" else None,
            pod_sets=tuple(
                str(p.get("name"))
                for p in (wl.get("spec") or {}).get("podSets") or []
                if isinstance(p, Mapping)
            ),
        )
    events.extend(tas_conflicts(state, checks, now=now))
    return KueueView(checks=checks, workloads=workloads, events=tuple(events))


def _spelling_event(
    wl: Mapping[str, Any], ns: str, name: str, rjobs: Sequence[str], now: str
) -> KueueEvent:
    message = f"Workload {ns}/{name}: replicatedJobs {', '.join(rjobs)}: {KUEUE_SPELLING}"
    return kueue_event(
        wl, "Workload", reason="KueueTopologySpelling", message=message, now=now, type_="Warning"
    )


def tas_conflicts(state: ClusterState, checks: frozenset[str], *, now: str) -> list[KueueEvent]:
    """A Warning per ClusterQueue that lists placer's check on a ResourceFlavor with
    `topologyName`: Kueue's Topology-Aware Scheduling would then assign the same pods itself
    (its own gate and nodeSelectors), and two placers of one pod fight."""
    events: list[KueueEvent] = []
    tas = {
        name
        for name, rf in state.resource_flavors.items()
        if (rf.get("spec") or {}).get("topologyName")
    }
    for name, cq in sorted(state.cluster_queues.items()):
        spec = cq.get("spec") or {}
        flavors = {
            str(f.get("name"))
            for group in spec.get("resourceGroups") or []
            if isinstance(group, Mapping)
            for f in group.get("flavors") or []
            if isinstance(f, Mapping)
        }
        on: set[str] = set()
        strategy = (spec.get("admissionChecksStrategy") or {}).get("admissionChecks") or []
        for rule in strategy:
            if isinstance(rule, Mapping) and rule.get("name") in checks:
                on |= set(rule.get("onFlavors") or flavors)
        if set(spec.get("admissionChecks") or []) & checks:  # v1beta1's plain list
            on |= flavors
        clash = sorted(on & flavors & tas)
        if clash:
            message = (
                f"ClusterQueue {name}: placer's admission check is used on ResourceFlavor(s) "
                f"{', '.join(clash)} with topologyName, so Kueue's Topology-Aware Scheduling "
                "places these pods too; use one of them per flavor (drop topologyName, or "
                "placer's check)"
            )
            events.append(
                kueue_event(
                    cq,
                    "ClusterQueue",
                    reason="TopologyConflict",
                    message=message,
                    now=now,
                    type_="Warning",
                )
            )
    return events
