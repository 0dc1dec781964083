"""The webhook and `placer controller --binding gate` together: pods of an unmodified JobSet get
the gate at creation (the webhook's JSONPatch, applied as the API server would), and the
controller places the JobSet and ungates them, exactly as for a `placer prepare`d manifest."""

from __future__ import annotations

import base64
import json
from typing import Any

import jsonpatch
import pytest

from benchmarks.simulate import cluster_sim as sim
from placer.controller.act.memory_adapter import MemoryCluster
from placer.controller.adapter import Kind, Obj
from plugins.webhook.admission import MANAGED_LABEL, answer_review
from tests.controller.builders import (
    add_jobset,
    assert_exclusive,
    assert_valid,
    block_of,
    controller,
    gated,
    jobset_pods,
    pod_requirements,
    record,
    tpu_cluster,
)
from tests.webhook.harness import review


def admit_pods_through_webhook(cluster: MemoryCluster, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every pod create passes the webhook first, its patch applied, like the API server does."""
    create = cluster.create

    def admitted_create(kind: Kind, obj: Obj) -> Obj:
        if kind == "pods":
            body, _ = answer_review(json.dumps(review(obj)).encode())
            response = json.loads(body)["response"]
            assert response["allowed"] is True
            if "patch" in response:
                obj = jsonpatch.apply_patch(obj, json.loads(base64.b64decode(response["patch"])))
        return create(kind, obj)

    monkeypatch.setattr(cluster, "create", admitted_create)


def opted_out(cluster: MemoryCluster, name: str) -> None:
    """Label the JobSet's pod template `placer.dev/managed: "false"` (the per-JobSet opt-out)."""

    def label(obj: Any) -> None:
        for rj in obj["spec"]["replicatedJobs"]:
            rj["template"]["spec"]["template"]["metadata"] = {"labels": {MANAGED_LABEL: "false"}}

    cluster.mutate("jobsets", name, label, namespace="default")


def test_unmodified_jobset_is_gated_by_the_webhook_then_placed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    cluster = tpu_cluster(blocks=3)
    admit_pods_through_webhook(cluster, monkeypatch)
    add_jobset(cluster, "train", jobs=2, pods=2, gate=False)
    pods = list(jobset_pods(cluster, "train"))
    assert len(pods) == 4 and all(gated(p) for p in pods)
    ctl = controller(cluster)
    report = assert_valid(ctl.run_once())
    assert list(report.planned.placed) == ["default/train"]
    a = record(cluster, "train")
    assert a is not None
    for pod in jobset_pods(cluster, "train"):
        job = pod["metadata"]["labels"]["batch.kubernetes.io/job-name"]
        assert not gated(pod)
        assert pod_requirements(pod)[0][0]["values"] == [block_of(a, job)]
    # All pods ungated: the record keeps the JobSet managed, so its blocks stay held and
    # nothing is rewritten.
    assert [m.key for m in report.managed] == ["default/train"]
    again = ctl.run_once()
    assert [m.key for m in again.managed] == ["default/train"] and again.writes == []
    # A second JobSet cannot take the first one's blocks.
    add_jobset(cluster, "eval", jobs=1, pods=2, gate=False)
    assert_valid(ctl.run_once())
    assert_exclusive(cluster)


def test_restarted_pods_are_gated_again_and_keep_their_domains(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    cluster = tpu_cluster(blocks=3)
    admit_pods_through_webhook(cluster, monkeypatch)
    add_jobset(cluster, "train", jobs=2, pods=1, gate=False)
    ctl = controller(cluster)
    ctl.run_once()
    before = record(cluster, "train")
    new = sim.restart(cluster, "default", "train")
    assert new and all(gated(p) for p in new)
    ctl.run_once()
    assert record(cluster, "train") == before
    fresh = [p for p in jobset_pods(cluster, "train") if p["metadata"]["name"] in
             {n["metadata"]["name"] for n in new}]  # fmt: skip
    assert fresh and not any(gated(p) for p in fresh)


def test_opted_out_and_node_selector_jobsets_are_left_to_others(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    cluster = tpu_cluster(blocks=3)
    admit_pods_through_webhook(cluster, monkeypatch)
    add_jobset(cluster, "mine", jobs=1, pods=1, gate=False, pods_now=False)
    opted_out(cluster, "mine")
    sim.create_pods(cluster, "default", "mine")
    add_jobset(cluster, "labeled", jobs=1, pods=1, gate=False, node_labels=True)
    assert not any(gated(p) for p in jobset_pods(cluster, "mine"))
    assert not any(gated(p) for p in jobset_pods(cluster, "labeled"))
    report = controller(cluster).run_once()
    assert report.managed == [] and report.writes == []
