"""The node-labels binding: JobSet's node-selector strategy, with placer labeling the domains."""

from __future__ import annotations

from benchmarks.simulate import cluster_sim as sim
from placer.controller.act.memory_adapter import MemoryCluster
from placer.controller.adapter import Obj
from placer.controller.decide.records.bindings import (
    LABELED_BY_ANNOTATION,
    NAMESPACED_JOB_LABEL,
    NO_SCHEDULE_TAINT,
)
from placer.model.assignment import ASSIGNMENT_ANNOTATION, Assignment, JobAssignment
from placer.model.plan import DomainRef
from tests.controller.apiserver import ApiServer
from tests.controller.builders import (
    BLOCK,
    TPU,
    add_jobset,
    assert_exclusive,
    assert_valid,
    block_of,
    controller,
    jobset_pods,
    record,
    tpu_cluster,
)

OURS = {"key": NO_SCHEDULE_TAINT.key, "value": "true", "effect": "NoSchedule"}
TPU_TAINT = {"key": TPU, "value": "present", "effect": "NoSchedule"}


def labels_of(cluster: MemoryCluster) -> dict[str, str | None]:
    return {
        n["metadata"]["name"]: n["metadata"]["labels"].get(NAMESPACED_JOB_LABEL)
        for n in cluster.objects("nodes")
    }


def place(cluster: MemoryCluster, name: str = "train", jobs: int = 2) -> None:
    add_jobset(cluster, name, jobs=jobs, gate=False, node_labels=True)
    assert_valid(controller(cluster, binding="node-labels").run_once())


def test_domains_are_labeled_and_tainted_keeping_everything_else() -> None:
    cluster = tpu_cluster(blocks=3)
    place(cluster)
    a = record(cluster, "train")
    assert a is not None
    for node in cluster.objects("nodes"):
        meta = node["metadata"]
        block = meta["labels"][BLOCK]
        owner = [j for j in a.jobs if block_of(a, j) == block]
        if owner:
            value = f"default_{owner[0]}"
            assert meta["labels"][NAMESPACED_JOB_LABEL] == value
            assert meta["annotations"][LABELED_BY_ANNOTATION] == value
            assert node["spec"]["taints"] == [TPU_TAINT, OURS]
        else:
            assert NAMESPACED_JOB_LABEL not in meta["labels"]
            assert node["spec"]["taints"] == [TPU_TAINT]
        assert meta["labels"]["pool"] == "tpu" and meta["labels"][BLOCK] == block


def test_pods_land_on_their_labeled_domain_and_nothing_is_rewritten() -> None:
    cluster = tpu_cluster(blocks=3)
    place(cluster)
    a = record(cluster, "train")
    assert a is not None
    assert len(sim.schedule(cluster)) == 4
    for pod in jobset_pods(cluster, "train"):
        job = pod["metadata"]["labels"]["batch.kubernetes.io/job-name"]
        node = cluster.get("nodes", pod["spec"]["nodeName"])
        assert node["metadata"]["labels"][BLOCK] == block_of(a, job)
    # Our own label and taint do not make the record look broken: nothing to do.
    report = controller(cluster, binding="node-labels").run_once()
    assert report.review.broken == {} and report.planned.plans == ()
    assert [w.op for w in report.writes] == ["event"]  # a fresh process re-announces (409)


def test_labels_and_taints_are_removed_when_the_jobset_finishes() -> None:
    cluster = tpu_cluster(blocks=3)
    place(cluster)
    sim.schedule(cluster)
    sim.finish(cluster, "default", "train")
    controller(cluster, binding="node-labels").run_once()
    assert set(labels_of(cluster).values()) == {None}
    for node in cluster.objects("nodes"):
        assert node["spec"]["taints"] == [TPU_TAINT]
        assert LABELED_BY_ANNOTATION not in (node["metadata"].get("annotations") or {})


def test_labels_are_removed_when_the_jobset_is_deleted() -> None:
    cluster = tpu_cluster(blocks=3)
    place(cluster)
    for p in jobset_pods(cluster, "train"):
        cluster.delete("pods", p["metadata"]["name"], namespace="default")
    cluster.delete("jobsets", "train", namespace="default")
    controller(cluster, binding="node-labels").run_once()
    assert set(labels_of(cluster).values()) == {None}


def test_released_domains_go_to_the_next_jobset() -> None:
    cluster = tpu_cluster(blocks=2)
    place(cluster, "a")
    sim.schedule(cluster)
    ctl = controller(cluster, binding="node-labels")
    add_jobset(cluster, "b", jobs=2, gate=False, node_labels=True)
    assert "default/b" in ctl.run_once().planned.unschedulable
    sim.finish(cluster, "default", "a")
    assert_valid(ctl.run_once())
    assert {v for v in labels_of(cluster).values()} == {"default_b-w-0", "default_b-w-1"}
    assert_exclusive(cluster)


def test_a_node_still_running_another_child_job_is_not_relabeled() -> None:
    cluster = tpu_cluster(blocks=1, per_block=2)
    place(cluster, "a", jobs=1)
    sim.schedule(cluster)
    # a finished, but its pod on n-0-1 lingers; b's record (written earlier) claims the block.
    sim.finish(cluster, "default", "a")
    [lingering] = [p for p in jobset_pods(cluster, "a") if p["spec"]["nodeName"] == "n-0-1"]

    def running(obj: Obj) -> None:
        obj["status"]["phase"] = "Running"

    cluster.mutate("pods", lingering["metadata"]["name"], running, namespace="default")
    b = add_jobset(cluster, "b", jobs=1, pods=1, gate=False, node_labels=True)
    claim = Assignment(
        jobset="default/b",
        jobs={
            "b-w-0": JobAssignment(domain=DomainRef(key=BLOCK, value="b0", path=[(BLOCK, "b0")]))
        },
    )
    cluster.patch(
        "jobsets",
        "b",
        {"metadata": {"annotations": {ASSIGNMENT_ANNOTATION: claim.to_annotation()}}},
        namespace="default",
    )
    report = controller(cluster, binding="node-labels").run_once()
    assert "default/b" in report.review.in_force and b
    assert labels_of(cluster) == {"n-0-0": "default_b-w-0", "n-0-1": "default_a-w-0"}
    # Once the lingering pod is gone, the node follows the record.
    cluster.delete("pods", lingering["metadata"]["name"], namespace="default")
    controller(cluster, binding="node-labels").run_once()
    assert labels_of(cluster) == {"n-0-0": "default_b-w-0", "n-0-1": "default_b-w-0"}


def test_nodes_labeled_by_someone_else_are_held() -> None:
    cluster = tpu_cluster(blocks=2)

    def foreign(obj: Obj) -> None:
        obj["metadata"]["labels"][NAMESPACED_JOB_LABEL] = "other_job-0"

    cluster.mutate("nodes", "n-0-0", foreign)
    place(cluster, "train", jobs=1)
    a = record(cluster, "train")
    assert a is not None and block_of(a, "train-w-0") == "b1"
    assert labels_of(cluster)["n-0-0"] == "other_job-0"  # never touched


def test_node_labels_over_http() -> None:
    with ApiServer(tpu_cluster(blocks=3)) as api:
        from placer.controller.act.kube_adapter import KubeAdapter

        add_jobset(api.cluster, "train", jobs=2, gate=False, node_labels=True)
        api.cluster.inject("patch", "nodes", 409, times=1)
        report = controller(KubeAdapter(api.client()), binding="node-labels").run_once()
        assert report.executed is not None and report.executed.failed == []
        assert sum(v is not None for v in labels_of(api.cluster).values()) == 4
        sim.finish(api.cluster, "default", "train")
        controller(KubeAdapter(api.client()), binding="node-labels").run_once()
        assert set(labels_of(api.cluster).values()) == {None}
        assert all(n["spec"]["taints"] == [TPU_TAINT] for n in api.cluster.objects("nodes"))


def test_a_label_value_over_63_characters_is_refused_with_a_reason_not_patched() -> None:
    """`<namespace>_<child Job>` is a label value: over 63 characters no node can carry it (the
    real API server answers 422 to every node patch, as tests/cluster found)."""
    cluster = tpu_cluster(blocks=3)
    namespace = "a-team-with-a-rather-long-namespace-name-for-training"
    add_jobset(cluster, "pretrain", jobs=2, gate=False, node_labels=True, namespace=namespace)
    report = controller(cluster, binding="node-labels").run_once()
    assert record(cluster, "pretrain", namespace) is None
    assert all(value is None for value in labels_of(cluster).values())
    events = [e for e in cluster.objects("events") if e["reason"] == "Unschedulable"]
    assert len(events) == 1
    value = f"{namespace}_pretrain-w-0"
    assert (
        f"label value {value!r} for child Job pretrain-w-0 is {len(value)} characters"
        in (events[0]["message"])
    )
    assert report.writes and not any("node" in type(w).__name__.lower() for w in report.writes)


def _marked_for(namespace: str) -> MemoryCluster:
    """A fleet with node n-0-0 labeled by placer for a child Job of `namespace`, whose JobSet is
    gone (no pod of it runs)."""
    cluster = tpu_cluster(blocks=2)
    value = f"{namespace}_job-0"

    def labeled(obj: Obj) -> None:
        obj["metadata"]["labels"][NAMESPACED_JOB_LABEL] = value
        obj["metadata"].setdefault("annotations", {})[LABELED_BY_ANNOTATION] = value

    cluster.mutate("nodes", "n-0-0", labeled)
    return cluster


def test_a_label_of_a_namespace_the_controller_does_not_watch_is_left_alone() -> None:
    """Another controller may manage team-b: one scoped to default cannot tell whether team-b's
    JobSet is gone, so it leaves the label; an unscoped one sees it gone and removes it."""
    scoped = _marked_for("team-b")
    assert_valid(controller(scoped, binding="node-labels", namespaces=("default",)).run_once())
    assert labels_of(scoped)["n-0-0"] == "team-b_job-0"
    unscoped = _marked_for("team-b")
    assert_valid(controller(unscoped, binding="node-labels").run_once())
    assert labels_of(unscoped)["n-0-0"] is None
