"""Which child Job, and which completion index, a live pod belongs to: read from JobSet's labels.

The controller (ungating) and the extender (filtering) both map a pod to its entry in the
`Assignment` record; keeping the label names and the reading rule here makes them agree. Pods come
from the API or from a scheduler's request, so odd values make a pod foreign, never an error.
JobSet puts the same keys on pods as labels and annotations; the Job controller adds the completion
index as an annotation, and as a label since Kubernetes 1.28, so both are read.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from placer.model.workload import JOBSET_NAME_LABEL, child_job_name

__all__ = [
    "COMPLETION_INDEX_LABEL",
    "JOBSET_UID_LABEL",
    "JOB_INDEX_LABEL",
    "JOB_NAME_LABEL",
    "REPLICATED_JOB_LABEL",
    "RESTART_ATTEMPT_LABEL",
    "PodRef",
    "pod_label",
    "pod_ref",
]

REPLICATED_JOB_LABEL = "jobset.sigs.k8s.io/replicatedjob-name"
JOB_INDEX_LABEL = "jobset.sigs.k8s.io/job-index"
JOBSET_UID_LABEL = "jobset.sigs.k8s.io/jobset-uid"
RESTART_ATTEMPT_LABEL = "jobset.sigs.k8s.io/restart-attempt"
COMPLETION_INDEX_LABEL = "batch.kubernetes.io/job-completion-index"
JOB_NAME_LABEL = "batch.kubernetes.io/job-name"


@dataclass(frozen=True)
class PodRef:
    """A JobSet pod's place: JobSet, child Job, completion index (and restart attempt)."""

    namespace: str
    jobset: str
    replicated_job: str
    job_index: int
    completion_index: int
    jobset_uid: str = ""
    restart_attempt: int = 0

    @property
    def jobset_key(self) -> str:
        return f"{self.namespace}/{self.jobset}"

    @property
    def job_name(self) -> str:
        return child_job_name(self.jobset, self.replicated_job, self.job_index)


def _int(text: object) -> int | None:
    if isinstance(text, int) and not isinstance(text, bool):
        return text
    if isinstance(text, str) and text.isdigit():
        return int(text)
    return None


def _mapping(value: object) -> Mapping[str, Any]:
    # a plain dict first: the ABC check alone was most of reading 10,000 pods' labels
    return value if type(value) is dict or isinstance(value, Mapping) else {}


def _sources(pod: Mapping[str, Any]) -> tuple[Mapping[str, Any], Mapping[str, Any]]:
    """Where a JobSet/Job key of the pod is read: its labels, then its annotations."""
    meta = _mapping(pod.get("metadata"))
    return _mapping(meta.get("labels")), _mapping(meta.get("annotations"))


def _first(sources: tuple[Mapping[str, Any], ...], key: str) -> str | None:
    for source in sources:
        value = source.get(key)
        if isinstance(value, str):
            return value
    return None


def pod_label(pod: Mapping[str, Any], key: str) -> str | None:
    """A JobSet/Job key of the pod: labels first, then annotations (both carry these keys)."""
    return _first(_sources(pod), key)


def pod_ref(pod: Mapping[str, Any]) -> PodRef | None:
    """The pod's JobSet coordinates, or None for a pod JobSet did not create (or mislabeled).
    Its labels and annotations are looked up once for the seven keys read (the controller's
    first cycle reads every pod of the cluster)."""
    namespace = _mapping(pod.get("metadata")).get("namespace")
    sources = _sources(pod)

    def read(key: str) -> str | None:
        return _first(sources, key)

    jobset, rjob = read(JOBSET_NAME_LABEL), read(REPLICATED_JOB_LABEL)
    job_index, completion = _int(read(JOB_INDEX_LABEL)), _int(read(COMPLETION_INDEX_LABEL))
    if not jobset or not rjob or job_index is None or completion is None:
        return None
    return PodRef(
        namespace=namespace if isinstance(namespace, str) and namespace else "default",
        jobset=jobset,
        jobset_uid=read(JOBSET_UID_LABEL) or "",
        replicated_job=rjob,
        job_index=job_index,
        completion_index=completion,
        restart_attempt=_int(read(RESTART_ATTEMPT_LABEL)) or 0,
    )
