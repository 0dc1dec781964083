"""Kueue TAS pod-template annotations -> the topology fields of a `ReplicatedJobRequest`.

Kueue reads these annotations on each replicated job's pod template; a JobSet's PodSet is the whole
replicated job (replicas x pods per child Job). What can be checked without the cluster is checked
here, at parse time (`read_kueue_topology`); what needs the topology levels (unknown level names, a
slice level above the podset level) is checked by `check_topology_levels` once the levels are
known. Every mistake is an `InputError` naming the file, the JobSet and the annotation.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from placer.model.errors import InputError
from placer.model.workload import (
    KUEUE_PODSET_GROUP,
    KUEUE_PREFERRED_TOPOLOGY,
    KUEUE_REQUIRED_TOPOLOGY,
    KUEUE_SLICE_SIZE,
    KUEUE_SLICE_TOPOLOGY,
    KUEUE_UNCONSTRAINED_TOPOLOGY,
    JobSetRequest,
)

__all__ = [
    "KueueTopology",
    "annotations_field",
    "check_podset_groups",
    "check_topology_levels",
    "read_kueue_topology",
]

HOSTNAME = "kubernetes.io/hostname"


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

    Rules (Kueue's webhook and KEP-2724): unconstrained excludes required and preferred (given both
    required and preferred, required counts, as in Kueue's solver; its webhook would refuse them);
    a slice size needs a slice topology; a slice topology without a size gets one child Job's pods
    (Kueue's default for JobSet, its `parallelism`); the slice size is a positive integer dividing
    the PodSet's pod count, replicas x pods per child Job.
    """

    def bad(key: str, message: str) -> InputError:
        return InputError(
            message, source=source, obj=obj, field=annotations_field(index, key), code="kueue"
        )

    required = annotations.get(KUEUE_REQUIRED_TOPOLOGY) or None
    preferred = annotations.get(KUEUE_PREFERRED_TOPOLOGY) or None
    unconstrained_text = annotations.get(KUEUE_UNCONSTRAINED_TOPOLOGY)
    unconstrained = False
    if unconstrained_text is not None:
        if unconstrained_text.lower() not in ("true", "false"):
            raise bad(
                KUEUE_UNCONSTRAINED_TOPOLOGY, f"must be true or false, got {unconstrained_text!r}"
            )
        unconstrained = unconstrained_text.lower() == "true"
    if unconstrained and (required or preferred):
        other = KUEUE_REQUIRED_TOPOLOGY if required else KUEUE_PREFERRED_TOPOLOGY
        raise bad(KUEUE_UNCONSTRAINED_TOPOLOGY, f"cannot be combined with {other}")
    slice_topology = annotations.get(KUEUE_SLICE_TOPOLOGY) or None
    size_text = annotations.get(KUEUE_SLICE_SIZE)
    slice_size: int | None = None
    if size_text is not None:
        if slice_topology is None:
            raise bad(KUEUE_SLICE_SIZE, f"a slice size needs {KUEUE_SLICE_TOPOLOGY}")
        try:
            slice_size = int(size_text)
        except ValueError:
            raise bad(KUEUE_SLICE_SIZE, f"must be a positive integer, got {size_text!r}") from None
        if slice_size < 1:
            raise bad(KUEUE_SLICE_SIZE, f"must be a positive integer, got {size_text!r}")
    elif slice_topology is not None:
        slice_size = max(pods_per_job, 1)
    pod_count = replicas * pods_per_job
    if slice_size is not None and pod_count % slice_size:
        raise bad(
            KUEUE_SLICE_SIZE if size_text is not None else KUEUE_SLICE_TOPOLOGY,
            f"slice size {slice_size} does not divide the replicated job's {pod_count} pods "
            f"({replicas} replicas x {pods_per_job} pods)",
        )
    group = annotations.get(KUEUE_PODSET_GROUP)
    if group is not None and not group:
        raise bad(KUEUE_PODSET_GROUP, "must not be empty")
    return KueueTopology(
        required_topology=required,
        preferred_topology=preferred,
        slice_topology=slice_topology,
        slice_size=slice_size,
        podset_group=group,
        unconstrained=unconstrained,
    )


def check_podset_groups(js: JobSetRequest) -> None:
    """Kueue: replicated jobs of one podset group ask for the same required or preferred level."""
    first: dict[str, tuple[int, str | None, str | None]] = {}
    for i, r in enumerate(js.replicated_jobs):
        if r.podset_group is None:
            continue
        asked = (r.required_topology, r.preferred_topology)
        seen = first.setdefault(r.podset_group, (i, *asked))
        if seen[1:] != asked or not any(asked):
            raise InputError(
                f"podset group {r.podset_group!r} needs the same required or preferred topology "
                f"on every member (replicatedJobs[{seen[0]}] and [{i}] differ or set none)",
                source=js.source,
                obj=js.key,
                field=annotations_field(i, KUEUE_PODSET_GROUP),
                code="kueue",
            )


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
                        f"unknown topology level {level!r}; the levels are {', '.join(order)}",
                        source=js.source,
                        obj=js.key,
                        field=annotations_field(i, key),
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
                    field=annotations_field(i, KUEUE_SLICE_TOPOLOGY),
                    code="kueue",
                )
