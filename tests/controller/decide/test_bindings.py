"""Pure write bodies: the ungate patch (narrowing only), node label patches, events, prepare."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from benchmarks.simulate.cluster_sim import jobset_object, node_object
from placer.controller.act.memory_adapter import pod_update_violation
from placer.controller.act.selectors import merge_patch
from placer.controller.decide.prepare import prepare_jobset
from placer.controller.decide.records.bindings import (
    LABELED_BY_ANNOTATION,
    NAMESPACED_JOB_LABEL,
    event_body,
    job_requirements,
    node_label_patch,
    node_selector_problem,
    ungate_patch,
    ungated_pod,
    unselected_replicated_jobs,
)
from placer.model.assignment import PLACEMENT_GATE, JobAssignment
from placer.model.errors import InputError
from placer.model.plan import DomainRef
from placer.model.workload import EXCLUSIVE_TOPOLOGY, NODE_SELECTOR_STRATEGY

BLOCK = "block"
RACK = "rack"
REQ = [
    {"key": BLOCK, "operator": "In", "values": ["b1"]},
    {"key": RACK, "operator": "In", "values": ["r2"]},
]


def pod(**spec: Any) -> dict[str, Any]:
    return {
        "metadata": {"name": "p", "namespace": "default", "resourceVersion": "7"},
        "spec": {"containers": [{"name": "c"}], **spec},
    }


def term(*exprs: dict[str, Any]) -> dict[str, Any]:
    return {"matchExpressions": list(exprs)}


def required(p: dict[str, Any]) -> list[dict[str, Any]]:
    aff = p["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    return list(aff["nodeSelectorTerms"])


def test_job_requirements_pin_the_whole_path_and_the_pinned_hostname() -> None:
    job = JobAssignment(
        domain=DomainRef(key=RACK, value="r2", path=[(BLOCK, "b1"), (RACK, "r2")]),
        nodes={0: "node-a"},
    )
    assert job_requirements(job, 0, hostnames={"node-a": "host-a"}) == [
        *REQ,
        {"key": "kubernetes.io/hostname", "operator": "In", "values": ["host-a"]},
    ]
    assert job_requirements(job, 1, hostnames={}) == REQ


def test_ungating_sets_affinity_when_there_is_none() -> None:
    p = pod(schedulingGates=[{"name": PLACEMENT_GATE}])
    new = ungated_pod(p, REQ)
    assert new is not None and "schedulingGates" not in new["spec"]
    assert required(new) == [term(*REQ)]
    assert pod_update_violation(p, new) is None


def test_an_empty_term_is_left_empty_and_the_others_narrowed() -> None:
    """An empty term matches no node and the API server lets it gain no requirement (a 422 on
    every cycle if placer tried): left empty, it still matches none."""
    real = term({"key": "pool", "operator": "In", "values": ["tpu"]})
    affinity = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [{}, copy.deepcopy(real)]}}}  # fmt: skip
    p = pod(schedulingGates=[{"name": PLACEMENT_GATE}], affinity=affinity)
    new = ungated_pod(p, REQ)
    assert new is not None
    assert required(new) == [{}, {"matchExpressions": [*real["matchExpressions"], *REQ]}]
    assert pod_update_violation(p, new) is None


@pytest.mark.parametrize(
    "terms",
    [
        pytest.param([term({"key": "pool", "operator": "In", "values": ["tpu"]})], id="one-term"),
        pytest.param(
            [
                term({"key": "pool", "operator": "In", "values": ["a"]}),
                term({"key": "pool", "operator": "In", "values": ["b"]}),
            ],
            id="two-terms",
        ),
    ],
)
def test_ungating_narrows_every_existing_term(terms: list[dict[str, Any]]) -> None:
    p = pod(
        schedulingGates=[{"name": "other"}, {"name": PLACEMENT_GATE}],
        affinity={
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": copy.deepcopy(terms)
                },
                "preferredDuringSchedulingIgnoredDuringExecution": [
                    {"weight": 1, "preference": {}}
                ],
            },
            "podAntiAffinity": {"x": 1},
        },
    )
    new = ungated_pod(p, REQ)
    assert new is not None
    assert new["spec"]["schedulingGates"] == [{"name": "other"}]  # other gates stay
    assert required(new) == [{"matchExpressions": [*t["matchExpressions"], *REQ]} for t in terms]
    assert new["spec"]["affinity"]["podAntiAffinity"] == {"x": 1}
    assert pod_update_violation(p, new) is None
    # The merge patch the controller sends produces exactly that pod.
    patch = ungate_patch(p, REQ)
    assert patch is not None and patch["metadata"] == {"resourceVersion": "7"}
    assert (
        merge_patch(p, {k: v for k, v in patch.items() if k != "metadata"})["spec"] == new["spec"]
    )


def test_ungating_an_ungated_pod_writes_nothing() -> None:
    assert ungated_pod(pod(), REQ) is None
    assert ungate_patch(pod(schedulingGates=[{"name": "other"}]), REQ) is None


def test_requirements_already_there_are_not_repeated() -> None:
    p = pod(
        schedulingGates=[{"name": PLACEMENT_GATE}],
        affinity={
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [term(REQ[0])]
                }
            }
        },
    )
    new = ungated_pod(p, REQ)
    assert new is not None and required(new) == [term(*REQ)]


@pytest.mark.parametrize(
    ("change", "why"),
    [
        pytest.param(
            lambda s: s.update(schedulingGates=[{"name": "new"}]), "only be removed", id="add-gate"
        ),
        pytest.param(lambda s: s.update(containers=[]), "other than", id="containers"),
        pytest.param(
            lambda s: s["affinity"]["nodeAffinity"][
                "requiredDuringSchedulingIgnoredDuringExecution"
            ]["nodeSelectorTerms"].append(term()),
            "added or removed",
            id="add-term",
        ),
        pytest.param(
            lambda s: s["affinity"]["nodeAffinity"][
                "requiredDuringSchedulingIgnoredDuringExecution"
            ]["nodeSelectorTerms"][0].update(matchExpressions=[]),
            "only gain",
            id="widen-term",
        ),
    ],
)
def test_the_stand_in_refuses_what_the_api_server_refuses(change: Any, why: str) -> None:
    p = pod(
        schedulingGates=[{"name": PLACEMENT_GATE}],
        affinity={
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [term(REQ[0])]
                }
            }
        },
    )
    new = copy.deepcopy(p)
    change(new["spec"])
    assert why in (pod_update_violation(p, new) or "")


def test_affinity_is_frozen_once_ungated() -> None:
    p = pod()
    new = pod(affinity={"nodeAffinity": {}})
    assert "immutable" in (pod_update_violation(p, new) or "")


def test_node_label_patch_sets_label_taint_and_mark_keeping_the_rest() -> None:
    node = node_object(
        "n",
        {"pool": "tpu"},
        taints=[{"key": "google.com/tpu", "value": "present", "effect": "NoSchedule"}],
    )
    node["metadata"]["resourceVersion"] = "3"
    patch = node_label_patch(node, "ns_job-0")
    assert patch is not None
    after = merge_patch(node, patch)
    assert after["metadata"]["labels"] == {
        "kubernetes.io/hostname": "n",
        "pool": "tpu",
        NAMESPACED_JOB_LABEL: "ns_job-0",
    }
    assert after["metadata"]["annotations"] == {LABELED_BY_ANNOTATION: "ns_job-0"}
    assert [t["key"] for t in after["spec"]["taints"]] == [
        "google.com/tpu",
        "alpha.jobset.sigs.k8s.io/no-schedule",
    ]
    assert node_label_patch(after, "ns_job-0") is None  # already so
    cleared = merge_patch(after, node_label_patch(after, None))
    assert cleared["metadata"]["labels"] == node["metadata"]["labels"]
    assert cleared["spec"]["taints"] == node["spec"]["taints"]
    assert "annotations" not in cleared["metadata"] or not cleared["metadata"]["annotations"]
    assert node_label_patch(cleared, None) is None


def test_event_names_are_derived_from_their_content() -> None:
    js = {"metadata": {"name": "train", "namespace": "ml", "uid": "u1"}}
    a = event_body(js, reason="Placed", message="m", type_="Normal", now="t1")
    b = event_body(js, reason="Placed", message="m", type_="Normal", now="t2")
    c = event_body(js, reason="Placed", message="other", type_="Normal", now="t1")
    assert a["metadata"] == b["metadata"] != c["metadata"]
    assert a["involvedObject"]["kind"] == "JobSet" and a["metadata"]["namespace"] == "ml"


def test_prepare_adds_the_gate_once() -> None:
    js = jobset_object("t", gate=False, replicated_jobs=[("a", 1, 1, {}), ("b", 2, 1, {})])
    once = prepare_jobset(js, "gate")
    assert prepare_jobset(once, "gate") == once
    for rj in once["spec"]["replicatedJobs"]:
        assert rj["template"]["spec"]["template"]["spec"]["schedulingGates"] == [
            {"name": PLACEMENT_GATE}
        ]
    assert (
        "schedulingGates"
        not in js["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]
    )  # input untouched


def test_prepare_node_labels_needs_an_exclusive_key() -> None:
    js = jobset_object("t", gate=False)
    with pytest.raises(InputError, match="exclusive-topology"):
        prepare_jobset(js, "node-labels")
    done = prepare_jobset(js, "node-labels", exclusive_key=BLOCK)
    assert done["metadata"]["annotations"] == {
        EXCLUSIVE_TOPOLOGY: BLOCK,
        NODE_SELECTOR_STRATEGY: "true",
    }
    keyed = jobset_object("t", gate=False, exclusive_key=RACK)
    assert (
        prepare_jobset(keyed, "node-labels", exclusive_key=BLOCK)["metadata"]["annotations"][
            EXCLUSIVE_TOPOLOGY
        ]
        == RACK
    )


def _keyed_on_templates(*keys: str | None) -> dict[str, Any]:
    """A JobSet of one replicated job per entry, each with that exclusive key on its template
    (None: no key)."""
    js = jobset_object(
        "t", gate=False, replicated_jobs=[(f"r{i}", 1, 1, {}) for i in range(len(keys))]
    )
    for rj, key in zip(js["spec"]["replicatedJobs"], keys, strict=True):
        if key is not None:
            rj["template"].setdefault("metadata", {})["annotations"] = {EXCLUSIVE_TOPOLOGY: key}
    return js


@pytest.mark.parametrize(
    ("jobset_level", "templates", "flag_on_templates", "unselected"),
    [
        ({EXCLUSIVE_TOPOLOGY: BLOCK, NODE_SELECTOR_STRATEGY: "true"}, (None, None), False, []),
        ({NODE_SELECTOR_STRATEGY: "true"}, (BLOCK, None), False, ["r0", "r1"]),
        ({}, (BLOCK, None), True, ["r1"]),
        ({EXCLUSIVE_TOPOLOGY: BLOCK}, (None, RACK), True, ["r0"]),
    ],
    ids=["both-on-jobset", "flag-apart-from-key", "flag-beside-key", "jobset-key-without-flag"],
)
def test_jobset_selects_a_child_job_only_with_the_key_and_the_flag_together(
    jobset_level: dict[str, str],
    templates: tuple[str | None, ...],
    flag_on_templates: bool,
    unselected: list[str],
) -> None:
    """JobSet v0.12.0's constructJob: tests/cluster/test_node_labels.py shows it on the real
    controller."""
    js = _keyed_on_templates(*templates)
    js["metadata"]["annotations"] = dict(jobset_level)
    if flag_on_templates:
        for rj in js["spec"]["replicatedJobs"]:
            annotations = rj["template"].setdefault("metadata", {}).setdefault("annotations", {})
            if EXCLUSIVE_TOPOLOGY in annotations:
                annotations[NODE_SELECTOR_STRATEGY] = "true"
    assert unselected_replicated_jobs(js) == unselected
    assert bool(node_selector_problem(js)) == bool(unselected)


def test_prepare_node_labels_puts_the_flag_beside_each_key_and_refuses_a_job_without_one() -> None:
    keyed = _keyed_on_templates(RACK, BLOCK)
    done = prepare_jobset(keyed, "node-labels")
    for rj in done["spec"]["replicatedJobs"]:
        assert rj["template"]["metadata"]["annotations"][NODE_SELECTOR_STRATEGY] == "true"
    assert unselected_replicated_jobs(done) == []
    assert prepare_jobset(done, "node-labels") == done
    with pytest.raises(InputError, match=r"child Jobs of r1 no node selector.*gate binding"):
        prepare_jobset(_keyed_on_templates(RACK, None), "node-labels")
