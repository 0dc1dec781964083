"""`pod_ref` reads each key as `pod_label` does: it looks the pod's labels and annotations up once
for all seven keys (a speed-up), so any pod must give the coordinates the one-key reads give."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from placer.model.kube.pods import (
    COMPLETION_INDEX_LABEL,
    JOB_INDEX_LABEL,
    JOBSET_UID_LABEL,
    REPLICATED_JOB_LABEL,
    RESTART_ATTEMPT_LABEL,
    PodRef,
    pod_label,
    pod_ref,
)
from placer.model.workload import JOBSET_NAME_LABEL

KEYS = (
    JOBSET_NAME_LABEL,
    REPLICATED_JOB_LABEL,
    JOB_INDEX_LABEL,
    COMPLETION_INDEX_LABEL,
    JOBSET_UID_LABEL,
    RESTART_ATTEMPT_LABEL,
)
VALUES = st.one_of(
    st.sampled_from(["", "0", "3", "12", "x", "train", "-1"]), st.integers(0, 5), st.none()
)
KEY_MAP = st.dictionaries(st.sampled_from(KEYS), VALUES)
MAYBE_MAP: st.SearchStrategy[object] = st.one_of(
    KEY_MAP, st.none(), st.just("not a map"), st.just([])
)


def _int(text: str | None) -> int | None:
    return int(text) if text is not None and text.isdigit() else None


def _one_key_at_a_time(pod: dict[str, Any]) -> PodRef | None:
    """`pod_ref` as it was written before: every key through `pod_label`."""
    jobset, rjob = pod_label(pod, JOBSET_NAME_LABEL), pod_label(pod, REPLICATED_JOB_LABEL)
    job_index = _int(pod_label(pod, JOB_INDEX_LABEL))
    completion = _int(pod_label(pod, COMPLETION_INDEX_LABEL))
    if not jobset or not rjob or job_index is None or completion is None:
        return None
    namespace = (pod.get("metadata") or {}).get("namespace")
    return PodRef(
        namespace=namespace if isinstance(namespace, str) and namespace else "default",
        jobset=jobset,
        jobset_uid=pod_label(pod, JOBSET_UID_LABEL) or "",
        replicated_job=rjob,
        job_index=job_index,
        completion_index=completion,
        restart_attempt=_int(pod_label(pod, RESTART_ATTEMPT_LABEL)) or 0,
    )


@given(
    labels=MAYBE_MAP,
    annotations=MAYBE_MAP,
    namespace=st.sampled_from([None, "", "research", 7]),
)
def test_pod_ref_reads_every_key_as_pod_label_does(
    labels: Any, annotations: Any, namespace: Any
) -> None:
    meta: dict[str, Any] = {"name": "p", "labels": labels, "annotations": annotations}
    if namespace is not None:
        meta["namespace"] = namespace
    pod = {"metadata": meta}
    assert pod_ref(pod) == _one_key_at_a_time(pod)
