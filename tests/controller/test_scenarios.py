"""The controller's scenarios on the in-memory cluster (the same logic runs over HTTP in
test_http.py): placing, refusing, competing, restarts, crashes, lost nodes, retries."""

from __future__ import annotations

from typing import Any

import pytest

from benchmarks.simulate import cluster_sim as sim
from placer.controller.act.memory_adapter import MemoryCluster
from placer.controller.adapter import Kind, Listing, Obj
from placer.controller.decide.records.ledger import LEDGER_NAME
from placer.controller.decide.records.recordsize import MAX_ANNOTATIONS_BYTES
from placer.controller.reconcile import Controller
from placer.model.assignment import ASSIGNMENT_ANNOTATION, Assignment
from placer.model.errors import ClusterError
from placer.solver.greedy.baselines import BestFitSolver
from tests.controller.builders import (
    BLOCK,
    TPU,
    add_jobset,
    assert_exclusive,
    assert_valid,
    block_of,
    controller,
    events,
    gated,
    jobset_pods,
    pod_requirements,
    record,
    tpu_cluster,
)


def test_gated_jobset_is_placed_and_every_pod_ungated_with_its_domain() -> None:
    cluster = tpu_cluster(blocks=3)
    add_jobset(cluster, "train", jobs=2, pods=2)
    report = assert_valid(controller(cluster).run_once())
    assert list(report.planned.placed) == ["default/train"]
    a = record(cluster, "train")
    assert a is not None and sorted(a.jobs) == ["train-w-0", "train-w-1"]
    for pod in jobset_pods(cluster, "train"):
        job = pod["metadata"]["labels"]["batch.kubernetes.io/job-name"]
        assert not gated(pod)
        assert pod_requirements(pod) == [
            [{"key": BLOCK, "operator": "In", "values": [block_of(a, job)]}]
        ]
    # The scheduler then puts every pod inside its child Job's block.
    bound = dict(sim.schedule(cluster))
    assert len(bound) == 4
    for pod in jobset_pods(cluster, "train"):
        job = pod["metadata"]["labels"]["batch.kubernetes.io/job-name"]
        node = cluster.get("nodes", pod["spec"]["nodeName"])
        assert node["metadata"]["labels"][BLOCK] == block_of(a, job)
    [placed] = events(cluster, "Placed")
    assert placed["involvedObject"]["name"] == "train"
    assert "train-w-0 -> b" in placed["message"]


def test_writes_are_bounded_and_a_second_pass_writes_nothing() -> None:
    cluster = tpu_cluster(blocks=3)
    add_jobset(cluster, "train", jobs=2, pods=2)
    cluster.calls.clear()
    ctl = controller(cluster)
    report = ctl.run_once()
    ops = [w.op for w in report.writes]
    assert ops == ["record", "event", "ungate", "ungate", "ungate", "ungate"]
    writes = [c for c in cluster.calls if c[0] in ("patch", "create", "replace")]
    # one per pod, two per JobSet, and one ledger commit per cycle that places
    assert len(writes) == 4 + 2 + 1
    assert writes[0] == ("create", "configmaps", "placer-ledger")  # committed before anything
    assert ctl.run_once().writes == []
    # A restarted controller does not know the event was sent: it sends it again, answered 409.
    again = controller(cluster).run_once()
    assert [w.op for w in again.writes] == ["event"]
    assert len(events(cluster, "Placed")) == 1


def test_pods_created_after_the_record_get_the_same_domain() -> None:
    cluster = tpu_cluster(blocks=3)
    add_jobset(cluster, "train", jobs=2, pods=2, pods_now=False)
    ctl = controller(cluster)
    ctl.run_once()
    a = record(cluster, "train")
    assert a is not None
    sim.create_pods(cluster, "default", "train")
    report = ctl.run_once()
    assert [w.op for w in report.writes] == ["ungate"] * 4
    assert report.planned.plans == ()  # nothing re-planned
    for pod in jobset_pods(cluster, "train"):
        assert not gated(pod)


def test_unschedulable_jobset_stays_gated_with_one_event() -> None:
    cluster = tpu_cluster(blocks=2)
    add_jobset(cluster, "huge", jobs=3, pods=2)
    ctl = controller(cluster)
    report = assert_valid(ctl.run_once())
    assert "default/huge" in report.planned.unschedulable
    assert record(cluster, "huge") is None
    assert all(gated(p) for p in jobset_pods(cluster, "huge"))
    [event] = events(cluster, "Unschedulable")
    assert event["type"] == "Warning" and event["message"]
    ctl.run_once()  # same reason: not announced again
    assert len(events(cluster, "Unschedulable")) == 1


def test_a_jobset_that_never_fits_is_not_told_it_waits_for_the_running_one() -> None:
    """Without time-aware planning too: three blocks needed of two, both held by `a`; `b`
    (one block) only waits, and says for whom."""
    cluster = tpu_cluster(blocks=2)
    add_jobset(cluster, "a", jobs=2, pods=2)
    ctl = controller(cluster)
    assert_valid(ctl.run_once())
    add_jobset(cluster, "huge", jobs=3, pods=2)
    add_jobset(cluster, "b", jobs=1, pods=2)
    assert_valid(ctl.run_once())
    said = {e["involvedObject"]["name"]: e["message"] for e in events(cluster, "Unschedulable")}
    assert said["huge"].endswith(
        f"needs 3 domains of {BLOCK} for 2 pods of {{{TPU}: 4}}; 2 available of 2"
    )
    assert "held by running default/a" in said["b"]


def test_competing_jobsets_never_share_a_block() -> None:
    cluster = tpu_cluster(blocks=3)
    add_jobset(cluster, "a", jobs=2)
    add_jobset(cluster, "b", jobs=2)
    report = assert_valid(controller(cluster).run_once())
    assert len(report.planned.placed) == 1 and len(report.planned.unschedulable) == 1
    assert_exclusive(cluster)
    loser = next(iter(report.planned.unschedulable)).split("/")[1]
    assert all(gated(p) for p in jobset_pods(cluster, loser))


def test_a_recorded_but_unscheduled_placement_is_held_against_later_jobsets() -> None:
    cluster = tpu_cluster(blocks=4)
    ctl = controller(cluster)
    add_jobset(cluster, "a", jobs=2)
    assert_valid(ctl.run_once())
    add_jobset(cluster, "b", jobs=2)  # a's pods are ungated but not running: only the record holds
    assert_valid(ctl.run_once())
    add_jobset(cluster, "c", jobs=1)
    report = assert_valid(ctl.run_once())
    assert "default/c" in report.planned.unschedulable
    assert_exclusive(cluster)
    a, b = record(cluster, "a"), record(cluster, "b")
    assert a is not None and b is not None
    blocks = {block_of(r, f"{n}-w-{i}") for n, r in (("a", a), ("b", b)) for i in range(2)}
    assert blocks == {"b0", "b1", "b2", "b3"}


def test_finished_jobset_releases_its_blocks() -> None:
    cluster = tpu_cluster(blocks=2)
    ctl = controller(cluster)
    add_jobset(cluster, "a", jobs=2)
    ctl.run_once()
    sim.schedule(cluster)
    add_jobset(cluster, "b", jobs=2)
    assert "default/b" in ctl.run_once().planned.unschedulable
    sim.finish(cluster, "default", "a")
    report = assert_valid(ctl.run_once())
    assert list(report.planned.placed) == ["default/b"]


def test_deleted_jobset_releases_its_blocks() -> None:
    cluster = tpu_cluster(blocks=2)
    ctl = controller(cluster)
    add_jobset(cluster, "a", jobs=2)
    ctl.run_once()
    for p in jobset_pods(cluster, "a"):
        cluster.delete("pods", p["metadata"]["name"], namespace="default")
    cluster.delete("jobsets", "a", namespace="default")
    add_jobset(cluster, "b", jobs=2)
    assert list(assert_valid(ctl.run_once()).planned.placed) == ["default/b"]


def _suspend(cluster: MemoryCluster, name: str, suspend: bool = True) -> None:
    obj = cluster.get("jobsets", name, namespace="default")
    assert obj is not None
    obj["spec"]["suspend"] = suspend
    cluster.replace("jobsets", obj)


def test_a_suspended_jobset_releases_its_blocks_once_its_pods_are_gone() -> None:
    """Suspending frees what a JobSet ran on: while its pods terminate they still hold their
    nodes; once they are gone its entry is released, its record cleared (one `Released` event)
    and another JobSet placed there; resumed, it is planned anew and waits its turn."""
    cluster = tpu_cluster(blocks=2)
    ctl = controller(cluster)
    add_jobset(cluster, "a", jobs=2)
    ctl.run_once()
    sim.schedule(cluster)
    _suspend(cluster, "a")
    add_jobset(cluster, "b", jobs=2)
    assert "default/b" in ctl.run_once().planned.unschedulable  # a's pods still there
    assert record(cluster, "a") is not None
    for pod in jobset_pods(cluster, "a"):
        cluster.delete("pods", pod["metadata"]["name"], namespace="default")
    report = assert_valid(ctl.run_once())
    assert list(report.planned.placed) == ["default/b"]
    assert record(cluster, "a") is None
    assert len(events(cluster, "Released")) == 1
    assert_exclusive(cluster)
    assert [w.op for w in ctl.run_once().writes] == []  # nothing more to release
    _suspend(cluster, "a", suspend=False)
    sim.create_pods(cluster, "default", "a")
    assert "default/a" in ctl.run_once().planned.unschedulable
    sim.schedule(cluster)
    sim.finish(cluster, "default", "b")
    assert list(assert_valid(ctl.run_once()).planned.placed) == ["default/a"]
    assert_exclusive(cluster)


def test_a_released_record_left_on_a_suspended_jobset_is_cleared_next_round() -> None:
    """A controller stopped between the ledger release and the annotation clear: the record
    without its ledger entry is cleared by the next round, and holds nothing meanwhile."""
    cluster = tpu_cluster(blocks=2)
    ctl = controller(cluster)
    add_jobset(cluster, "a", jobs=2)
    ctl.run_once()
    _suspend(cluster, "a")
    for pod in jobset_pods(cluster, "a"):
        cluster.delete("pods", pod["metadata"]["name"], namespace="default")
    ledger = cluster.get("configmaps", LEDGER_NAME, namespace=ctl.config.ledger_namespace)
    assert ledger is not None
    ledger["data"] = {k: v for k, v in ledger["data"].items() if "default.a" not in k}
    cluster.replace("configmaps", ledger)
    add_jobset(cluster, "b", jobs=2)
    report = assert_valid(ctl.run_once())
    assert list(report.planned.placed) == ["default/b"]
    assert record(cluster, "a") is None


def test_restart_keeps_the_domains() -> None:
    cluster = tpu_cluster(blocks=4)
    ctl = controller(cluster)
    add_jobset(cluster, "train", jobs=2)
    ctl.run_once()
    before = record(cluster, "train")
    assert before is not None
    sim.schedule(cluster)
    new_pods = sim.restart(cluster, "default", "train")  # pods recreated, gated, attempt 1
    assert new_pods and all(gated(p) for p in new_pods)
    report = ctl.run_once()
    assert [w.op for w in report.writes] == ["ungate"] * 4
    assert record(cluster, "train") == before
    for pod in jobset_pods(cluster, "train"):
        job = pod["metadata"]["labels"]["batch.kubernetes.io/job-name"]
        assert pod["metadata"]["labels"]["jobset.sigs.k8s.io/restart-attempt"] == "1"
        assert pod_requirements(pod) == [
            [{"key": BLOCK, "operator": "In", "values": [block_of(before, job)]}]
        ]


def test_a_lost_node_replaces_only_the_affected_child_job() -> None:
    cluster = tpu_cluster(blocks=3)
    ctl = controller(cluster)
    add_jobset(cluster, "train", jobs=2)
    ctl.run_once()
    sim.schedule(cluster)
    before = record(cluster, "train")
    assert before is not None
    lost_block = block_of(before, "train-w-0")
    kept_block = block_of(before, "train-w-1")
    lost_node = f"n-{lost_block[1:]}-0"
    sim.set_node(cluster, lost_node, ready=False)
    # The pod on the lost node dies; the Job controller recreates it, gated.
    for p in jobset_pods(cluster, "train"):
        if p["spec"].get("nodeName") == lost_node:
            cluster.delete("pods", p["metadata"]["name"], namespace="default")
    sim.create_pods(cluster, "default", "train")
    report = assert_valid(ctl.run_once())
    assert report.review.broken["default/train"].keys() == {"train-w-0"}
    after = record(cluster, "train")
    assert after is not None
    assert block_of(after, "train-w-1") == kept_block
    assert block_of(after, "train-w-0") not in (lost_block, kept_block)
    [replacement] = [p for p in jobset_pods(cluster, "train") if not p["spec"].get("nodeName")]
    assert pod_requirements(replacement) == [
        [{"key": BLOCK, "operator": "In", "values": [block_of(after, "train-w-0")]}]
    ]
    placed = [e["message"] for e in events(cluster, "Placed")]
    assert len(placed) == 2 and any(
        f"(plan {after.plan_id})" in m and f"train-w-0 -> {block_of(after, 'train-w-0')}" in m
        for m in placed
    )


def test_a_lost_node_with_no_spare_block_keeps_the_record_and_says_why() -> None:
    cluster = tpu_cluster(blocks=2)
    ctl = controller(cluster)
    add_jobset(cluster, "train", jobs=2)
    ctl.run_once()
    before = record(cluster, "train")
    sim.set_node(cluster, "n-0-0", unschedulable=True)
    report = ctl.run_once()
    assert "default/train" in report.planned.unschedulable
    assert record(cluster, "train") == before
    [event] = events(cluster, "Unschedulable")
    assert "cordoned" in event["message"] and "cannot re-place" in event["message"]


class Killed(BaseException):
    """The process dies: not an error anything in the controller catches."""


class Dying:
    """Forwards to a cluster, and kills the caller on the `after`-th write."""

    def __init__(self, cluster: MemoryCluster, after: int) -> None:
        self.cluster, self.after, self.writes = cluster, after, 0

    def _write(self) -> None:
        if self.writes == self.after:
            raise Killed
        self.writes += 1

    def list(self, kind: Kind, **kw: Any) -> Listing:
        return self.cluster.list(kind, **kw)

    def watch(self, kind: Kind, **kw: Any) -> Any:
        return self.cluster.watch(kind, **kw)

    def get(self, kind: Kind, name: str, **kw: Any) -> Obj:
        return self.cluster.get(kind, name, **kw)

    def patch(self, kind: Kind, name: str, patch: Obj, **kw: Any) -> Obj:
        self._write()
        return self.cluster.patch(kind, name, patch, **kw)

    def create(self, kind: Kind, obj: Obj) -> Obj:
        self._write()
        return self.cluster.create(kind, obj)

    def lead(self, settings: Any, **kw: Any) -> None:
        self.cluster.lead(settings, **kw)


@pytest.mark.parametrize("after", range(7))
def test_killed_between_two_writes_resumes_without_loss_or_duplication(after: int) -> None:
    cluster = tpu_cluster(blocks=3)
    add_jobset(cluster, "train", jobs=2, pods=2)
    with pytest.raises(Killed):
        controller(Dying(cluster, after)).run_once()
    written_before = record(cluster, "train")
    report = assert_valid(controller(cluster).run_once())  # a fresh controller: no memory
    final = record(cluster, "train")
    assert final is not None
    if written_before is not None:
        assert final == written_before and not report.planned.plans
    for pod in jobset_pods(cluster, "train"):
        job = pod["metadata"]["labels"]["batch.kubernetes.io/job-name"]
        assert pod_requirements(pod) == [
            [{"key": BLOCK, "operator": "In", "values": [block_of(final, job)]}]
        ]
    assert len(events(cluster, "Placed")) == 1
    pod_writes = [c for c in cluster.calls if c[0] == "patch" and c[1] == "pods"]
    assert len(pod_writes) == 4  # each pod written exactly once across both lives
    jobset_writes = [c for c in cluster.calls if c[0] == "patch" and c[1] == "jobsets"]
    assert len(jobset_writes) == 1


def test_a_record_that_no_longer_fits_after_the_commit_is_released_not_retried_forever() -> None:
    """Killed after the ledger commit, before the record write; meanwhile the JobSet's
    annotations grew past what leaves room for the record. The next controller releases the
    placement and reports why, instead of failing the record write every cycle while the entry
    holds the blocks; another JobSet may take them."""
    cluster = tpu_cluster(blocks=2)
    add_jobset(cluster, "train", jobs=2, pods=2)
    with pytest.raises(Killed):
        controller(Dying(cluster, 1)).run_once()  # the ledger commit, then killed
    assert record(cluster, "train") is None
    obj = cluster.get("jobsets", "train", namespace="default")
    assert obj is not None
    obj["metadata"]["annotations"]["example.com/notes"] = "x" * (MAX_ANNOTATIONS_BYTES - 100)
    cluster.replace("jobsets", obj)
    ctl = controller(cluster)
    report = assert_valid(ctl.run_once())
    assert "placement record" in report.planned.unschedulable["default/train"]
    assert record(cluster, "train") is None
    add_jobset(
        cluster, "waiting", jobs=2, pods=2
    )  # behind `train` in the queue, whatever the clock
    assert list(assert_valid(ctl.run_once()).planned.placed) == ["default/waiting"]
    assert_exclusive(cluster)


class _Counting:
    """Best-fit, counting its calls: how many solves a cycle made."""

    name = "counting"

    def __init__(self) -> None:
        self.calls = 0

    def solve(self, snapshot: Any, jobsets: Any, options: Any) -> Any:
        self.calls += 1
        return BestFitSolver().solve(snapshot, jobsets, options)


@pytest.mark.parametrize(
    ("spare", "solves"),
    [
        pytest.param(-1, 1, id="no-room-for-any-record"),
        pytest.param(50, 2, id="room-for-a-smaller-record"),
    ],
)
def test_a_jobset_that_cannot_carry_its_record_leaves_its_domains_to_the_next(
    spare: int, solves: int
) -> None:
    """Its other annotations leave no room for its record: it is unschedulable with that reason,
    and the JobSet behind it in the queue gets the domains in the same cycle, not never. With
    no room for any record it is left out before the solve; with room for a smaller one than it
    gets, the round is planned again without it."""
    cluster = tpu_cluster(blocks=2)
    add_jobset(cluster, "train", jobs=2, pods=2)
    obj = cluster.get("jobsets", "train", namespace="default")
    assert obj is not None
    others = sum(len(k) + len(v) for k, v in obj["metadata"]["annotations"].items())
    floor = len(ASSIGNMENT_ANNOTATION) + len(
        Assignment(jobset="default/train", jobs={}, plan_id="0" * 12).to_annotation()
    )
    # `spare` bytes left beside a record naming no child Job (its record takes 86 more)
    fill = MAX_ANNOTATIONS_BYTES - others - floor - len("example.com/notes") - spare
    obj["metadata"]["annotations"]["example.com/notes"] = "x" * fill
    cluster.replace("jobsets", obj)
    add_jobset(cluster, "waiting", jobs=2, pods=2)  # behind `train`, whatever the clock
    solver = _Counting()
    report = assert_valid(Controller(cluster, controller(cluster).config, solver=solver).run_once())
    assert list(report.planned.placed) == ["default/waiting"]
    assert "placement record" in report.planned.unschedulable["default/train"]
    assert record(cluster, "train") is None and record(cluster, "waiting") is not None
    assert solver.calls == solves
    assert_exclusive(cluster)


@pytest.mark.parametrize(
    ("verb", "kind", "status"),
    [
        pytest.param("patch", "jobsets", 503, id="record-503"),
        pytest.param("patch", "pods", 500, id="pod-500"),
        pytest.param("patch", "pods", 429, id="pod-429"),
        pytest.param("create", "events", 503, id="event-503"),
        pytest.param("patch", "jobsets", 409, id="record-409"),
        pytest.param("patch", "pods", 409, id="pod-409"),
    ],
)
def test_conflicts_and_server_errors_are_retried(verb: str, kind: str, status: int) -> None:
    cluster = tpu_cluster(blocks=3)
    add_jobset(cluster, "train", jobs=2, pods=2)
    cluster.inject(verb, kind, status, times=2)
    report = controller(cluster).run_once()
    assert report.executed is not None and report.executed.failed == []
    assert record(cluster, "train") is not None
    assert not any(gated(p) for p in jobset_pods(cluster, "train"))
    assert len(events(cluster, "Placed")) == 1


def test_a_record_written_by_someone_else_meanwhile_aborts_ours() -> None:
    cluster = tpu_cluster(blocks=3)
    add_jobset(cluster, "train", jobs=2, pods=2)
    ctl = controller(cluster)
    ctl.cache.relist()
    # Another writer records first (e.g. a replica that still believed it led).
    other = '{"jobs":{},"jobset":"default/train","pinned":false,"plan_id":"x"}'
    cluster.patch(
        "jobsets",
        "train",
        {"metadata": {"annotations": {"placer.dev/assignment": other}}},
        namespace="default",
    )
    report = ctl.run_cycle(force_plan=True)  # decided on the stale cache: no record seen
    assert report.executed is not None
    assert next(w.op for w, _ in report.executed.dropped) == "record"
    assert all(gated(p) for p in jobset_pods(cluster, "train"))


def test_temporary_errors_give_up_after_the_attempts_and_ungate_nothing() -> None:
    cluster = tpu_cluster(blocks=3)
    add_jobset(cluster, "train", jobs=2, pods=2)
    cluster.inject("patch", "jobsets", 503, times=100)
    report = controller(cluster).run_once()
    assert report.executed is not None and [w.op for w, _ in report.executed.failed] == ["record"]
    assert {w.op for w, _ in report.executed.dropped} == {"event", "ungate"}
    assert all(gated(p) for p in jobset_pods(cluster, "train"))


def test_dry_run_writes_nothing() -> None:
    cluster = tpu_cluster(blocks=3)
    add_jobset(cluster, "train", jobs=2, pods=2)
    report = controller(cluster, dry_run=True).run_once()
    assert len(report.writes) == 6 and report.executed is None
    assert record(cluster, "train") is None
    assert all(gated(p) for p in jobset_pods(cluster, "train"))


def test_unmanaged_jobsets_are_left_alone() -> None:
    cluster = tpu_cluster(blocks=3)
    add_jobset(cluster, "plain", gate=False)
    report = controller(cluster).run_once()
    assert report.managed == [] and report.writes == []


def test_namespaces_limit_what_is_managed() -> None:
    cluster = tpu_cluster(blocks=3)
    add_jobset(cluster, "a", jobs=1, namespace="team-a")
    add_jobset(cluster, "b", jobs=1, namespace="team-b")
    report = controller(cluster, namespaces=("team-a",)).run_once()
    assert [m.key for m in report.managed] == ["team-a/a"]
    assert record(cluster, "b", "team-b") is None


def test_pinned_nodes_add_the_hostname() -> None:
    cluster = tpu_cluster(blocks=2)
    add_jobset(cluster, "train", jobs=1, pods=2)
    controller(cluster, pin_nodes=True).run_once()
    a = record(cluster, "train")
    assert a is not None and a.pinned and sorted(a.jobs["train-w-0"].nodes) == [0, 1]
    for pod in jobset_pods(cluster, "train"):
        index = int(pod["metadata"]["labels"]["batch.kubernetes.io/job-completion-index"])
        [term] = pod_requirements(pod)
        assert term[-1] == {
            "key": "kubernetes.io/hostname",
            "operator": "In",
            "values": [a.jobs["train-w-0"].nodes[index]],
        }


def test_cpsat_places_what_the_greedy_places() -> None:
    cluster = tpu_cluster(blocks=3)
    add_jobset(cluster, "a", jobs=1)
    add_jobset(cluster, "b", jobs=2)
    report = assert_valid(controller(cluster, solver="cpsat").run_once())
    assert sorted(report.planned.placed) == ["default/a", "default/b"]
    assert_exclusive(cluster)


def test_cluster_errors_carry_status() -> None:
    cluster = MemoryCluster()
    with pytest.raises(ClusterError) as e:
        cluster.get("nodes", "missing")
    assert e.value.status == 404


class _IgnoresHolds:
    """A broken solver: plans as if no node were held, so it gives away a held block."""

    name = "ignores-holds"

    def solve(self, snapshot: Any, jobsets: Any, options: Any) -> Any:
        free = tuple(n.model_copy(update={"jobsets": ()}) for n in snapshot.nodes)
        return BestFitSolver().solve(snapshot.model_copy(update={"nodes": free}), jobsets, options)


def test_a_plan_the_checker_refuses_leaves_its_targets_unschedulable() -> None:
    """The controller's solver checks every plan (it is prepared by the registry): a plan that
    breaks a rule is never committed or written, and the cycle goes on with a reason."""
    cluster = tpu_cluster(blocks=1)
    add_jobset(cluster, "a", jobs=1)
    assert list(controller(cluster).run_once().planned.placed) == ["default/a"]
    add_jobset(cluster, "b", jobs=1)
    config = controller(cluster).config
    report = Controller(cluster, config, solver=_IgnoresHolds()).run_once()
    assert report.planned.placed == {} and report.planned.plans == ()
    assert report.planned.unschedulable["default/b"].startswith("plan refused by the checker: ")
    assert record(cluster, "b") is None
    [event] = events(cluster, "Unschedulable")
    assert event["involvedObject"]["name"] == "b" and "refused by the checker" in event["message"]
