"""Who a pod is, as far as the plan is concerned: its JobSet, child Job and completion index.

The scheduler hands the extender a whole Pod object; every decision needs only the few labels JobSet
and the Job controller put on it (upstream.md, "Labels ... that JobSet sets"). Reading them in one
place means the filter, the prioritizer and the tests agree on what makes a pod "planned".
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict

from placer.model.kube.pods import (
    COMPLETION_INDEX_LABEL,
    JOB_INDEX_LABEL,
    JOB_NAME_LABEL,
    REPLICATED_JOB_LABEL,
    pod_label,
    pod_ref,
)
from placer.model.workload import JOBSET_NAME_LABEL

__all__ = [
    "COMPLETION_INDEX_LABEL",
    "JOB_INDEX_LABEL",
    "JOB_NAME_LABEL",
    "REPLICATED_JOB_LABEL",
    "JobKey",
    "PodInfo",
    "pod_info",
]

JobKey = tuple[str, str, str]
"""(namespace, jobset name, child Job name): how the plan state finds a pod's child Job."""


class PodInfo(BaseModel):
    """The identity of one pod being scheduled, read from its metadata only."""

    model_config = ConfigDict(frozen=True)
    namespace: str
    name: str
    uid: str = ""
    jobset: str = ""
    """JobSet name, empty for pods JobSet does not own."""
    job: str = ""
    """Child Job name (`<jobset>-<replicatedJob>-<jobIndex>`), empty when not derivable."""
    completion_index: int | None = None
    daemonset: bool = False
    """DaemonSet pods are per-node infrastructure (device plugins, agents): never kept out."""

    @property
    def job_key(self) -> JobKey | None:
        if not self.jobset or not self.job:
            return None
        return (self.namespace, self.jobset, self.job)

    @property
    def ref(self) -> str:
        return f"{self.namespace}/{self.name}"


def pod_info(pod: Mapping[str, Any]) -> PodInfo:
    """Read a Pod object (the API's JSON shape). Missing or odd fields make a pod foreign, never an
    error: the scheduler may send any pod, and an unreadable label must not block scheduling."""
    meta = pod.get("metadata")
    meta = meta if isinstance(meta, Mapping) else {}
    namespace = meta.get("namespace")
    namespace = namespace if isinstance(namespace, str) and namespace else "default"
    name = meta.get("name")
    uid = meta.get("uid")
    owners = meta.get("ownerReferences")
    daemonset = isinstance(owners, list) and any(
        isinstance(o, Mapping) and o.get("kind") == "DaemonSet" for o in owners
    )
    ref = pod_ref(pod)
    jobset = pod_label(pod, JOBSET_NAME_LABEL) or ""
    if ref is not None:
        job = ref.job_name
    else:
        job = (pod_label(pod, JOB_NAME_LABEL) or "") if jobset else ""
    completion = pod_label(pod, COMPLETION_INDEX_LABEL)
    return PodInfo(
        namespace=namespace,
        name=name if isinstance(name, str) else "",
        uid=uid if isinstance(uid, str) else "",
        jobset=jobset,
        job=job,
        completion_index=int(completion) if completion and completion.isdigit() else None,
        daemonset=daemonset,
    )
