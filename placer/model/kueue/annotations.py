"""Kueue TAS pod-template annotations -> the topology fields of a `ReplicatedJobRequest`.

Each annotation may be written in Kueue's spelling (`kueue.x-k8s.io/podset-required-topology`)
or placer's (`placer.dev/podset-required-topology`), with the same meaning; one replicated job
uses one spelling. Placer's is for its Kueue admission check, whose flavors have no
`topologyName`: there Kueue refuses quota to a Workload with its own spelling.

Kueue reads these annotations on each replicated job's pod template; a JobSet's PodSet is the whole
replicated job (replicas x pods per child Job). What can be checked without the cluster is checked
here, at parse time (`read_kueue_topology`); what needs the topology levels (unknown level names, a
slice level above the podset level) is checked by `check_topology_levels` once the levels are
known. Every mistake is an `InputError` naming the file, the JobSet and the annotation.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from placer.model.errors import InputError
from placer.model.messages import echo
from placer.model.read.limits import INT32_MAX
from placer.model.scheduling import go_int
from placer.model.workload import (
    EXCLUSIVE_TOPOLOGY,
    KUEUE_PODSET_GROUP,
    KUEUE_PREFERRED_TOPOLOGY,
    KUEUE_REQUIRED_TOPOLOGY,
    KUEUE_SLICE_SIZE,
    KUEUE_SLICE_TOPOLOGY,
    KUEUE_TOPOLOGY_PREFIX,
    KUEUE_UNCONSTRAINED_TOPOLOGY,
    PLACER_TOPOLOGY_PREFIX,
    TOPOLOGY_ANNOTATIONS,
    JobSetRequest,
    ReplicatedJobRequest,
    topology_annotation,
)

__all__ = [
    "KueueTopology",
    "PodsetGroup",
    "annotations_field",
    "check_podset_groups",
    "check_topology_levels",
    "kueue_spelled",
    "podset_groups",
    "read_kueue_topology",
]

HOSTNAME = "kubernetes.io/hostname"
_ONE_OF = (KUEUE_REQUIRED_TOPOLOGY, KUEUE_PREFERRED_TOPOLOGY, KUEUE_UNCONSTRAINED_TOPOLOGY)
"""At most one of these may be present on a pod template, whatever its value (Kueue's webhook)."""
_BOOLEANS = {
    **dict.fromkeys(("1", "t", "T", "TRUE", "true", "True"), True),
    **dict.fromkeys(("0", "f", "F", "FALSE", "false", "False"), False),
}
"""What Kueue's webhook takes as a boolean annotation (Go's `strconv.ParseBool`), and its value."""
_UINT64_LIMIT = 2**64
_UINT64_DIGITS = len(str(_UINT64_LIMIT - 1))
"""20: a longer run of digits is past 2**64 without converting it (Python refuses to convert
more than 4,300 digits, and a hostile annotation may hold far more)."""


def annotations_field(index: int, key: str) -> str:
    """The field path of one pod-template annotation of replicated job `index`."""
    return f"spec.replicatedJobs[{index}].template.spec.template.metadata.annotations[{key}]"


@dataclass(frozen=True)
class KueueTopology:
    """The topology request of one replicated job, as `ReplicatedJobRequest` keeps it."""

    required_topology: str | None = None
    preferred_topology: str | None = None
    slice_topology: str | None = None
    slice_size: int | None = None
    podset_group: str | None = None
    unconstrained: bool = False
    prefix: str = KUEUE_TOPOLOGY_PREFIX
    """The spelling the annotations were written in (`ReplicatedJobRequest.topology_prefix`)."""


def _spelled(
    annotations: Mapping[str, str], error_at: Callable[[str, str], InputError]
) -> tuple[dict[str, str], str]:
    """The topology annotations keyed by Kueue's names, and the spelling they were written in;
    both spellings on one template is an error (which one would count is not obvious)."""
    kueue = {k: annotations[k] for k in TOPOLOGY_ANNOTATIONS if k in annotations}
    own = {
        k: annotations[topology_annotation(k, PLACER_TOPOLOGY_PREFIX)]
        for k in TOPOLOGY_ANNOTATIONS
        if topology_annotation(k, PLACER_TOPOLOGY_PREFIX) in annotations
    }
    if kueue and own:
        raise error_at(
            topology_annotation(next(iter(own)), PLACER_TOPOLOGY_PREFIX),
            f"cannot be combined with {next(iter(kueue))}: write the topology in placer's "
            "spelling or in Kueue's, not both",
        )
    return (own, PLACER_TOPOLOGY_PREFIX) if own else (kueue, KUEUE_TOPOLOGY_PREFIX)


def read_kueue_topology(
    annotations: Mapping[str, str],
    *,
    index: int,
    pods_per_job: int,
    replicas: int,
    source: str = "",
    obj: str = "",
) -> KueueTopology:
    """Read and check the Kueue TAS annotations of replicated job `index`.

    Rules (Kueue v0.19.2's webhook, `ValidateTASPodSetRequest`; tests/cluster/test_kueue_rules.py
    asks it): at most one of required, preferred and unconstrained is present, whatever the
    values; a slice topology and a slice size come together; the slice size is an int32 of at
    least 1 as Go's `ParseInt` reads it. A podset group name is not empty nor a number, needs a
    required or preferred level and takes no slices. One rule is placer's own: the slice size
    divides the PodSet's pod count (replicas x pods per child Job), since Kueue's TAS counts
    whole slices (count / size, rounded down) and says nothing of the pods left over.
    """

    def error_at(written: str, message: str) -> InputError:
        return InputError(
            message, source=source, obj=obj, field=annotations_field(index, written), code="kueue"
        )

    values, prefix = _spelled(annotations, error_at)

    def k(key: str) -> str:
        return topology_annotation(key, prefix)

    def bad(key: str, message: str) -> InputError:
        return error_at(k(key), message)

    required = values.get(KUEUE_REQUIRED_TOPOLOGY) or None
    preferred = values.get(KUEUE_PREFERRED_TOPOLOGY) or None
    unconstrained_text = values.get(KUEUE_UNCONSTRAINED_TOPOLOGY)
    unconstrained = False
    if unconstrained_text is not None:
        if unconstrained_text not in _BOOLEANS:
            raise bad(
                KUEUE_UNCONSTRAINED_TOPOLOGY,
                f"must be a boolean (true or false), got {echo(unconstrained_text)}",
            )
        unconstrained = _BOOLEANS[unconstrained_text]
    levels = [key for key in _ONE_OF if key in values]  # present, whatever the value
    if len(levels) > 1:
        raise bad(levels[-1], f"cannot be combined with {k(levels[0])}")
    slice_topology = values.get(KUEUE_SLICE_TOPOLOGY) or None
    size_text = values.get(KUEUE_SLICE_SIZE)
    slice_size: int | None = None
    if size_text is not None:
        if slice_topology is None:
            raise bad(KUEUE_SLICE_SIZE, f"a slice size needs {k(KUEUE_SLICE_TOPOLOGY)}")
        slice_size = go_int(size_text)
        if slice_size is None or not 1 <= slice_size <= INT32_MAX:
            raise bad(KUEUE_SLICE_SIZE, f"must be a positive integer, got {echo(size_text)}")
    elif slice_topology is not None:
        raise bad(KUEUE_SLICE_TOPOLOGY, f"needs {k(KUEUE_SLICE_SIZE)}, the pods of one slice")
    pod_count = replicas * pods_per_job
    if slice_size is not None and pod_count % slice_size:
        raise bad(
            KUEUE_SLICE_SIZE,
            f"slice size {slice_size} does not divide the replicated job's {pod_count} pods "
            f"({replicas} replicas x {pods_per_job} pods)",
        )
    group = values.get(KUEUE_PODSET_GROUP)
    if group is not None:
        _check_group_annotation(group, required or preferred, slice_topology, size_text, bad, k)
    return KueueTopology(
        required_topology=required,
        preferred_topology=preferred,
        slice_topology=slice_topology,
        slice_size=slice_size,
        podset_group=group,
        unconstrained=unconstrained,
        prefix=prefix,
    )


def _check_group_annotation(
    group: str,
    level: str | None,
    slice_topology: str | None,
    size_text: str | None,
    bad: Callable[[str, str], InputError],
    k: Callable[[str], str],
) -> None:
    """Kueue's webhook rules for one replicated job's podset-group-name (`tas_validation.go`)."""
    if not group:
        raise bad(KUEUE_PODSET_GROUP, "must not be empty")
    if _is_uint64(group):
        raise bad(KUEUE_PODSET_GROUP, f"must not be a number, got {echo(group)}")
    if slice_topology is not None or size_text is not None:
        other = k(KUEUE_SLICE_TOPOLOGY if slice_topology is not None else KUEUE_SLICE_SIZE)
        raise bad(KUEUE_PODSET_GROUP, f"cannot be combined with {other}")
    if level is None:
        raise bad(
            KUEUE_PODSET_GROUP,
            f"needs {k(KUEUE_REQUIRED_TOPOLOGY)} or {k(KUEUE_PREFERRED_TOPOLOGY)} beside it",
        )


def _is_uint64(text: str) -> bool:
    """Whether Kueue's webhook reads `text` as a number (Go's `strconv.ParseUint(text, 10, 64)`):
    ASCII digits only, below 2**64; a longer run of digits is a name to it."""
    if not text or len(text) > _UINT64_DIGITS or not all("0" <= c <= "9" for c in text):
        return False
    return int(text) < _UINT64_LIMIT


def kueue_spelled(js: JobSetRequest) -> list[str]:
    """The replicated jobs whose topology is written in Kueue's spelling, which Kueue refuses
    under placer's admission check (its flavors have no `topologyName`)."""
    return [
        r.name
        for r in js.replicated_jobs
        if r.topology_prefix == KUEUE_TOPOLOGY_PREFIX and (r.kueue_topology or r.podset_group)
    ]


def written(r: ReplicatedJobRequest, kueue_key: str) -> str:
    """The annotation key `r`'s topology was written with, for one of Kueue's keys."""
    return topology_annotation(kueue_key, r.topology_prefix)


@dataclass(frozen=True)
class PodsetGroup:
    """Two replicated jobs of one JobSet that Kueue places as one: a leader of one pod and its
    workers, in one domain of their shared level (indices into `replicated_jobs`)."""

    name: str
    workers: int
    leader: int


def _members(js: JobSetRequest) -> dict[str, list[int]]:
    """Podset group name -> indices of its replicated jobs, in the order first named: the one
    grouping that `podset_groups` (which member leads) and `check_podset_groups` (Kueue's rules)
    both read, so they agree on what a group is."""
    members: dict[str, list[int]] = {}
    for i, r in enumerate(js.replicated_jobs):
        if r.podset_group is not None:
            members.setdefault(r.podset_group, []).append(i)
    return members


def podset_groups(js: JobSetRequest) -> tuple[PodsetGroup, ...]:
    """The JobSet's podset groups (checked by `check_podset_groups`), in the order first named.

    Which member leads follows Kueue (`findLeaderAndWorkers`): the second one, unless it has more
    pods than the first; so with one pod each, the second member leads.
    """
    found: list[PodsetGroup] = []
    for name, (first, second) in ((n, m) for n, m in _members(js).items() if len(m) == 2):
        rjobs = js.replicated_jobs
        if rjobs[second].pod_count > rjobs[first].pod_count:
            found.append(PodsetGroup(name, workers=second, leader=first))
        else:
            found.append(PodsetGroup(name, workers=first, leader=second))
    return tuple(found)


def check_podset_groups(js: JobSetRequest) -> None:
    """Kueue's webhook rules across a JobSet's podset groups (`ValidatePodSetGroupingTopology`):
    exactly two members, one of them of a single pod (the leader), asking for the same required
    or preferred level. Placer adds one: no member is exclusive (exclusive child Jobs keep their
    own rules, one domain of their key each, and a leader pod cannot share one).
    """

    def bad(i: int, message: str) -> InputError:
        return InputError(
            f"podset group {echo(js.replicated_jobs[i].podset_group)} {message}",
            source=js.source,
            obj=js.key,
            field=annotations_field(i, written(js.replicated_jobs[i], KUEUE_PODSET_GROUP)),
            code="kueue",
        )

    for indices in _members(js).values():
        if len(indices) != 2:
            listed = ", ".join(f"replicatedJobs[{i}]" for i in indices)
            raise bad(
                indices[-1],
                f"needs exactly 2 replicated jobs, a leader and its workers (Kueue), "
                f"found {len(indices)}: {listed}",
            )
        first, second = (js.replicated_jobs[i] for i in indices)
        if first.pod_count != 1 and second.pod_count != 1:
            raise bad(
                indices[1],
                f"needs one member of exactly 1 pod, the leader (Kueue); replicatedJobs"
                f"[{indices[0]}] has {first.pod_count} pods and [{indices[1]}] {second.pod_count}",
            )
        if _asked(first) != _asked(second):
            raise bad(
                indices[1],
                f"needs the same required or preferred topology on both members "
                f"(replicatedJobs[{indices[0]}] and [{indices[1]}] differ)",
            )
        for i in indices:
            if js.replicated_jobs[i].exclusive_key is not None:
                raise bad(
                    i,
                    f"cannot have an exclusive member ({EXCLUSIVE_TOPOLOGY}): exclusive child Jobs "
                    "take one domain each, so a leader cannot join its workers there",
                )


def _asked(r: ReplicatedJobRequest) -> tuple[str, str]:
    """The topology Kueue reads for a podset: required wins over preferred."""
    if r.required_topology is not None:
        return ("required", r.required_topology)
    return ("preferred", r.preferred_topology or "")


def check_topology_levels(jobsets: Sequence[JobSetRequest], levels: Sequence[str]) -> None:
    """Every level the JobSets name is a declared level, and no slice level is above its podset's.

    `levels` are the declared levels coarse to fine (a Kueue Topology, `--levels`, or the cluster
    description); the hostname is always a level, the finest one, as placer's topology tree ends
    with the nodes. With no declared levels there is nothing to check: placer then derives the
    levels from the keys the JobSets name.
    """
    if not levels:
        return
    order = [lv for lv in levels if lv != HOSTNAME] + [HOSTNAME]
    for js in jobsets:
        for i, r in enumerate(js.replicated_jobs):
            named = (
                (KUEUE_REQUIRED_TOPOLOGY, r.required_topology),
                (KUEUE_PREFERRED_TOPOLOGY, r.preferred_topology),
                (KUEUE_SLICE_TOPOLOGY, r.slice_topology),
            )
            for key, level in named:
                if level is not None and level not in order:
                    raise InputError(
                        f"unknown topology level {echo(level)}; the levels are {', '.join(order)}",
                        source=js.source,
                        obj=js.key,
                        field=annotations_field(i, written(r, key)),
                        code="kueue",
                    )
            podset_level = r.required_topology or r.preferred_topology
            above = (
                r.slice_topology is not None
                and podset_level is not None
                and order.index(r.slice_topology) < order.index(podset_level)
            )
            if above:
                raise InputError(
                    f"slice topology {r.slice_topology} is above the podset topology "
                    f"{podset_level}",
                    source=js.source,
                    obj=js.key,
                    field=annotations_field(i, written(r, KUEUE_SLICE_TOPOLOGY)),
                    code="kueue",
                )
