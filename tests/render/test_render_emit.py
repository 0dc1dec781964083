from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import yaml

from placer.model.cluster import ClusterSnapshot
from placer.model.plan import DomainRef, JobPlacement, JobSetOutcome
from placer.model.workload import JobSetRequest
from placer.render.emit import (
    NAMESPACED_JOB_LABEL,
    affinity_patch,
    domain_requirements,
    emit_files,
    node_label_patches,
    template_node_terms,
    write_files,
)
from tests.render.plans import job, sample_plan
from tests.strategies import BLOCK, NODEPOOL, TPU_TAINT, cluster, jobset, pool, rjob

REQUIRED = "requiredDuringSchedulingIgnoredDuringExecution"


def terms_of(patch: dict[str, Any]) -> list[dict[str, Any]]:
    terms: list[dict[str, Any]] = patch["spec"]["template"]["spec"]["affinity"]["nodeAffinity"][
        REQUIRED
    ]["nodeSelectorTerms"]
    return terms


def test_domain_requirements_pin_every_level_of_the_path() -> None:
    d = DomainRef(key=NODEPOOL, value="pool3", path=[(BLOCK, "b1"), (NODEPOOL, "pool3")])
    assert domain_requirements(d) == [
        {"key": BLOCK, "operator": "In", "values": ["b1"]},
        {"key": NODEPOOL, "operator": "In", "values": ["pool3"]},
    ]


def test_domain_without_path_still_pins_its_own_key() -> None:
    d = DomainRef(key=NODEPOOL, value="pool3")
    assert domain_requirements(d) == [{"key": NODEPOOL, "operator": "In", "values": ["pool3"]}]


def test_affinity_patch_for_an_exclusive_child_job() -> None:
    patch = affinity_patch(job("ms", 0, "pool0", block="b2"))
    assert terms_of(patch) == [
        {
            "matchExpressions": [
                {"key": BLOCK, "operator": "In", "values": ["b2"]},
                {"key": NODEPOOL, "operator": "In", "values": ["pool0"]},
            ]
        }
    ]


def test_affinity_patch_ands_the_domain_into_every_existing_term() -> None:
    existing = [
        {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]},
        {
            "matchExpressions": [{"key": "zone", "operator": "In", "values": ["b"]}],
            "matchFields": [{"key": "metadata.name", "operator": "NotIn", "values": ["bad"]}],
        },
    ]
    patch = affinity_patch(job("ms", 0, "pool0"), existing)
    pin = {"key": NODEPOOL, "operator": "In", "values": ["pool0"]}
    terms = terms_of(patch)
    assert len(terms) == 2
    assert terms[0]["matchExpressions"][0]["values"] == ["a"]
    assert terms[1]["matchExpressions"][0]["values"] == ["b"]
    assert all(pin in t["matchExpressions"] for t in terms)
    assert terms[1]["matchFields"] == existing[1]["matchFields"]
    assert len(existing[0]["matchExpressions"]) == 1, "input terms must not be mutated"


def test_an_empty_term_of_the_template_stays_empty() -> None:
    """An empty term matches no node: ANDing the domain into it would make it match the whole
    domain, letting pods onto nodes the template's other terms keep them off."""
    zone = {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]}
    placed = job("ms", 0, "pool0")
    assert placed.domain is not None
    terms = terms_of(affinity_patch(placed, [{}, zone]))
    pins = domain_requirements(placed.domain)
    assert terms == [{}, {"matchExpressions": [*zone["matchExpressions"], *pins]}]


def _on(node: str) -> dict[str, Any]:
    return {"key": "metadata.name", "operator": "In", "values": [node]}


def test_affinity_patch_pins_a_non_exclusive_job_to_its_nodes_one_term_each() -> None:
    """The API server refuses a node field requirement with more than one name (`must be only
    one value when operator is 'In' or 'NotIn' for node field selector`): any of two nodes is
    two terms, ORed."""
    patch = affinity_patch(job("cpu", 0, None, hosts=3))
    assert terms_of(patch) == [{"matchFields": [_on("cpu-0")]}, {"matchFields": [_on("cpu-1")]}]


def test_a_job_pinned_to_nodes_keeps_each_of_the_templates_terms_with_each_node() -> None:
    """(A or B) and (n1 or n2) is (A and n1) or (A and n2) or (B and n1) or (B and n2); an
    existing node field requirement stays beside ours."""
    a = {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]}
    b = {"matchFields": [{"key": "metadata.name", "operator": "NotIn", "values": ["bad"]}]}
    terms = terms_of(affinity_patch(job("cpu", 0, None, hosts=3), [a, b]))
    assert terms == [
        {**a, "matchFields": [_on("cpu-0")]},
        {**a, "matchFields": [_on("cpu-1")]},
        {"matchFields": [*b["matchFields"], _on("cpu-0")]},
        {"matchFields": [*b["matchFields"], _on("cpu-1")]},
    ]
    assert all(len(r["values"]) == 1 for t in terms for r in t.get("matchFields", []))


def test_affinity_patch_is_empty_for_an_unplaced_job() -> None:
    unplaced = JobPlacement(name="x-w-0", replicated_job="w", index=0, domain=None, pods=[])
    assert affinity_patch(unplaced) == {}


def test_template_node_terms_read_from_the_kept_manifest() -> None:
    term = {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]}
    manifest = {
        "spec": {
            "replicatedJobs": [
                {"name": "other", "template": {}},
                {
                    "name": "workers",
                    "template": {
                        "spec": {
                            "template": {
                                "spec": {
                                    "affinity": {
                                        "nodeAffinity": {REQUIRED: {"nodeSelectorTerms": [term]}}
                                    }
                                }
                            }
                        }
                    },
                },
            ]
        }
    }
    request = jobset("ms", rjob()).model_copy(update={"manifest": manifest})
    assert template_node_terms(request, "workers") == [term]
    assert template_node_terms(request, "other") == []
    assert template_node_terms(request, "missing") == []


def _snapshot() -> ClusterSnapshot:
    return cluster(
        pool("pool0", 2, block="b0"), pool("pool1", 3, block="b0"), pool("pool0", 1, block="b1")
    )


def test_node_label_patches_cover_the_whole_domain_and_only_it() -> None:
    snapshot = cluster(pool("pool0", 2, block="b0"), pool("pool1", 3, block="b0"))
    outcome = JobSetOutcome(
        namespace="team-a", name="ms", status="placed", jobs=[job("ms", 0, "pool1", hosts=1)]
    )
    patches = node_label_patches(outcome, snapshot)
    assert [p.node for p in patches] == ["pool1-host-0", "pool1-host-1", "pool1-host-2"]
    assert all(p.labels == {NAMESPACED_JOB_LABEL: "team-a_ms-workers-0"} for p in patches)
    patch = patches[0].patch()
    assert patch["metadata"]["labels"] == {NAMESPACED_JOB_LABEL: "team-a_ms-workers-0"}
    # taints are replaced as a whole by the API server: the node's own TPU taint must be kept
    assert patch["spec"]["taints"] == [
        {"key": TPU_TAINT.key, "effect": "NoSchedule", "value": "present"},
        {"key": "alpha.jobset.sigs.k8s.io/no-schedule", "effect": "NoSchedule", "value": "true"},
    ]
    assert patches[0].commands() == [
        "kubectl label node pool1-host-0 --overwrite "
        "alpha.jobset.sigs.k8s.io/namespaced-job=team-a_ms-workers-0",
        "kubectl taint node pool1-host-0 --overwrite "
        "alpha.jobset.sigs.k8s.io/no-schedule=true:NoSchedule",
    ]


def test_node_label_patches_tell_same_named_domains_apart_by_path() -> None:
    snapshot = _snapshot()
    outcome = JobSetOutcome(
        namespace="ns",
        name="ms",
        status="placed",
        jobs=[job("ms", 0, "pool0", block="b1", hosts=1)],
    )
    nodes = [p.node for p in node_label_patches(outcome, snapshot)]
    assert nodes == ["pool0-host-0"]
    b1_node = next(n for n in snapshot.nodes if n.labels.get(BLOCK) == "b1")
    assert b1_node.name == "pool0-host-0"


def test_emit_files_layout() -> None:
    plan = sample_plan()
    snapshot = cluster(*(pool(f"pool{i}", 2, block="b0") for i in range(5)))
    requests = [
        jobset("multislice", rjob(replicas=5), namespace="team-a"),
        jobset("big", rjob(replicas=8), namespace="team-b"),
    ]
    files = emit_files(plan, requests, snapshot)
    jobs = sorted(f for f in files if f.startswith("jobs/"))
    assert jobs == [
        *(f"jobs/team-a/multislice-workers-{i}.yaml" for i in range(5)),
        "jobs/team-c/cpu-driver-0.yaml",
    ]
    assert "nodes.yaml" not in files, "no JobSet uses the node-selector strategy"
    patch = yaml.safe_load(files["jobs/team-a/multislice-workers-3.yaml"])
    assert terms_of(patch)[0]["matchExpressions"][-1] == {
        "key": NODEPOOL,
        "operator": "In",
        "values": ["pool3"],
    }
    script = files["jobs.sh"]
    assert script.startswith("#!/usr/bin/env bash\n")
    assert (
        "kubectl patch job multislice-workers-3 -n team-a --type strategic --patch-file "
        "jobs/team-a/multislice-workers-3.yaml"
    ) in script.splitlines()


def test_emit_files_node_selector_strategy() -> None:
    plan = sample_plan()
    snapshot = cluster(*(pool(f"pool{i}", 2, block="b0") for i in range(5)))
    request = jobset("multislice", rjob(replicas=5), namespace="team-a").model_copy(
        update={"node_selector_strategy": True}
    )
    files = emit_files(plan, [request], snapshot)
    nodes = yaml.safe_load(files["nodes.yaml"])
    assert [n["node"] for n in nodes] == sorted(
        f"pool{i}-host-{h}" for i in range(5) for h in range(2)
    )
    by_node = {n["node"]: n["patch"]["metadata"]["labels"][NAMESPACED_JOB_LABEL] for n in nodes}
    assert by_node["pool4-host-1"] == "team-a_multislice-workers-4"
    assert files["nodes.sh"].count("kubectl label node") == 10
    assert files["nodes.sh"].count("kubectl taint node") == 10


def test_write_files(tmp_path: Path) -> None:
    written = write_files(tmp_path / "out", {"jobs/ns/a.yaml": "x: 1\n", "jobs.sh": "#!/bin/sh\n"})
    assert sorted(p.relative_to(tmp_path / "out").as_posix() for p in written) == [
        "jobs.sh",
        "jobs/ns/a.yaml",
    ]
    assert (tmp_path / "out/jobs/ns/a.yaml").read_text() == "x: 1\n"
    assert os.access(tmp_path / "out/jobs.sh", os.X_OK)


def test_partial_jobset_emits_only_the_jobs_it_holds() -> None:
    # first-fit can leave a JobSet partial, holding some domains
    outcome = JobSetOutcome(
        namespace="ns",
        name="p",
        status="partial",
        jobs=[
            job("p", 0, "pool0"),
            JobPlacement(
                name="p-workers-1", replicated_job="workers", index=1, domain=None, pods=[]
            ),
        ],
    )
    plan = sample_plan().model_copy(update={"jobsets": [outcome]})
    files = emit_files(plan, [], cluster(pool("pool0", 2)))
    assert sorted(files) == ["jobs.sh", "jobs/ns/p-workers-0.yaml"]


def _two_term_request() -> JobSetRequest:
    """team-a/multislice whose pod template already requires one of two zones (two terms)."""
    terms = [
        {"matchExpressions": [{"key": "zone", "operator": "In", "values": [z]}]} for z in ("a", "b")
    ]
    affinity = {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": terms}
        }
    }
    manifest = {
        "spec": {
            "replicatedJobs": [
                {
                    "name": "workers",
                    "template": {"spec": {"template": {"spec": {"affinity": affinity}}}},
                }
            ]
        }
    }
    request = jobset("multislice", rjob(replicas=5), namespace="team-a")
    return request.model_copy(update={"manifest": manifest})


def test_patches_spell_out_repeated_values_without_yaml_anchors() -> None:
    snapshot = cluster(*(pool(f"pool{i}", 2, block="b0") for i in range(5)))
    files = emit_files(sample_plan(), [_two_term_request()], snapshot)
    text = files["jobs/team-a/multislice-workers-3.yaml"]
    assert "&id" not in text and "*id" not in text
    terms = terms_of(yaml.safe_load(text))
    assert [t["matchExpressions"][0]["values"] for t in terms] == [["a"], ["b"]]
    assert all(t["matchExpressions"][-1]["values"] == ["pool3"] for t in terms)


def test_write_files_clears_an_earlier_runs_files_only(tmp_path: Path) -> None:
    stale = tmp_path / "jobs" / "team-z" / "old-job-0.yaml"
    stale.parent.mkdir(parents=True)
    stale.write_text("stale")
    (tmp_path / "nodes.sh").write_text("stale")
    mine = tmp_path / "README.txt"
    mine.write_text("the user's")
    snapshot = cluster(*(pool(f"pool{i}", 2, block="b0") for i in range(5)))
    requests = [jobset("multislice", rjob(replicas=5), namespace="team-a")]
    write_files(tmp_path, emit_files(sample_plan(), requests, snapshot))
    assert not stale.exists() and not stale.parent.exists()
    assert not (tmp_path / "nodes.sh").exists(), "no node-selector JobSet in this plan"
    assert mine.read_text() == "the user's"
    assert (tmp_path / "jobs" / "team-a" / "multislice-workers-0.yaml").exists()
