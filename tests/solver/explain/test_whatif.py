"""What-if transforms (drain, add pools, remove a running JobSet) and the usage they rely on."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path

import pytest
import yaml

from placer.model.errors import InputError
from placer.model.options import SolveOptions
from placer.model.snapshots.compact import parse_description
from placer.model.snapshots.load import snapshot_from_objects, snapshot_to_kubectl_list
from placer.model.whatif import (
    add_pools_from,
    apply_whatifs,
    drain,
    remove_jobset,
    running_priority,
)
from placer.solver.explain import ExplainSettings, explain_jobset
from tests.strategies import NODEPOOL, TPU, cluster, jobset, pool, rjob

OPTIONS = SolveOptions(workers=1, time_limit_s=5)

DESCRIPTION = {
    "kind": "ClusterDescription",
    "priorityClasses": {"low": 10},
    "pools": [
        {
            "name": "p{i}",
            "count": 2,
            "hosts": 2,
            "allocatable": {"cpu": "8", TPU: "4", "pods": "110"},
        }
    ],
    "running": [
        {"pools": ["*"], "requests": {"cpu": "1"}, "pods": 2},
        {
            "jobset": "team-z/run",
            "pools": ["p0"],
            "requests": {"cpu": "2", TPU: "4"},
            "hostPorts": [8471],
            "priority": "low",
        },
    ],
}


def test_compact_running_entries_record_usage_per_jobset() -> None:
    snap = parse_description(DESCRIPTION)
    n = snap.node("p0-0")
    usage = n.jobset_usage["team-z/run"]
    assert usage.requests == {"cpu": 2, TPU: 4, "pods": 1}
    assert usage.host_ports == ((8471, "TCP"),)
    assert usage.priority == 10
    assert running_priority(snap, "team-z/run") == 10
    assert n.free == {"cpu": 5, TPU: 0, "pods": 107}


def test_kubectl_rendering_keeps_usage_per_jobset() -> None:
    snap = parse_description(DESCRIPTION)
    doc = snapshot_to_kubectl_list(snap)
    items = doc["items"]
    again = snapshot_from_objects(
        [i for i in items if i["kind"] == "Node"], [i for i in items if i["kind"] == "Pod"]
    )
    assert again.nodes == snap.nodes


def test_remove_frees_resources_ports_and_holds() -> None:
    snap = parse_description(DESCRIPTION)
    freed, note = remove_jobset(snap, "team-z/run")
    n = freed.node("p0-0")
    assert n.free == {"cpu": 7, TPU: 4, "pods": 108}
    assert n.used_host_ports == ()
    assert n.jobsets == () and n.jobset_usage == {}
    assert freed.node("p1-0") == snap.node("p1-0")
    assert note == "removed running JobSet team-z/run (2 nodes freed)"


def test_remove_without_recorded_usage_releases_the_hold_only() -> None:
    snap = cluster(pool("p0", 2, jobsets=["team-z/run"], free={"cpu": Decimal(1)}))
    freed, note = remove_jobset(snap, "team-z/run")
    assert freed.node("p0-host-0").jobsets == ()
    assert freed.node("p0-host-0").free == {"cpu": 1}
    assert "only its hold on domains was released" in note


def test_drain_by_node_and_by_label() -> None:
    snap = cluster(pool("p0", 2), pool("p1", 2))
    one, note = drain(snap, "p0-host-1")
    assert [n.name for n in one.nodes] == ["p0-host-0", "p1-host-0", "p1-host-1"]
    assert note == "drained 1 node (p0-host-1)"
    whole, _ = drain(snap, f"{NODEPOOL}=p1")
    assert [n.name for n in whole.nodes] == ["p0-host-0", "p0-host-1"]


@pytest.mark.parametrize(
    ("kind", "arg", "words"),
    [
        ("drain", "nope", "no node named 'nope'"),
        ("drain", "k=v", "no node labeled k=v"),
        ("remove", "team-z/none", "no running JobSet"),
    ],
)
def test_unknown_targets_are_input_errors(kind: str, arg: str, words: str) -> None:
    with pytest.raises(InputError, match=words):
        apply_whatifs(cluster(pool("p0", 1)), [(kind, arg)])


def test_add_pools_from_a_description_file(tmp_path: Path) -> None:
    path = tmp_path / "more.yaml"
    path.write_text(yaml.safe_dump({"kind": "ClusterDescription", "pools": [{"name": "extra"}]}))
    snap, note = add_pools_from(cluster(pool("p0", 1)), path)
    assert [n.name for n in snap.nodes] == ["p0-host-0", "extra-0"]
    assert note == f"added 1 node from {path}"
    with pytest.raises(InputError, match="already exists"):
        add_pools_from(snap, path)
    bad = tmp_path / "bad.yaml"
    bad.write_text(yaml.safe_dump({"kind": "JobSet"}))
    with pytest.raises(InputError, match="expected kind ClusterDescription"):
        add_pools_from(snap, bad)


def test_whatifs_change_the_explanation() -> None:
    # the only domain is held by a running JobSet: not placed; after it finishes: placed
    usage_snap = parse_description(DESCRIPTION)
    target = jobset("t", rjob(replicas=2))
    before = explain_jobset(
        usage_snap, [target], "team-a/t", OPTIONS, settings=ExplainSettings(remedies=False)
    )
    assert before.status == "unschedulable"
    assert before.replicated_jobs[0].reasons[0].kind == "held"
    after_snap, _ = apply_whatifs(usage_snap, [("remove", "team-z/run")])
    after = explain_jobset(
        after_snap, [target], "team-a/t", OPTIONS, settings=ExplainSettings(remedies=False)
    )
    assert after.status == "placed"
    # draining a pool takes away what it needed again
    drained, _ = apply_whatifs(after_snap, [("drain", f"{NODEPOOL}=p1")])
    assert explain_jobset(drained, [target], "team-a/t", OPTIONS).status == "unschedulable"
