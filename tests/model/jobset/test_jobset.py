"""The JobSet parser: every upstream example, each placement rule it reads, and its errors."""

from __future__ import annotations

import copy
import json
import logging
import re
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
import yaml

from placer.model.errors import InputError
from placer.model.jobset.parse import load_jobsets, parse_jobset
from placer.model.priorities import PriorityClasses
from placer.model.read.limits import MAX_PODS_PER_JOBSET
from placer.model.scheduling import (
    NodeSelectorRequirement,
    NodeSelectorTerm,
    Toleration,
    matches_term,
)

DATA = Path(__file__).resolve().parents[2] / "data" / "jobset-examples"
EXAMPLES = sorted(DATA.glob("*.yaml"))


def manifest(
    pod_spec: dict[str, Any] | None = None,
    *,
    annotations: dict[str, str] | None = None,
    job_annotations: dict[str, str] | None = None,
    pod_annotations: dict[str, str] | None = None,
    **job: Any,
) -> dict[str, Any]:
    """A one-replicatedJob JobSet; `job` sets Job spec fields (parallelism, completions)."""
    spec = pod_spec or {"containers": [{"name": "main", "image": "busybox"}]}
    template: dict[str, Any] = {"spec": {**job, "template": {"spec": spec}}}
    if job_annotations:
        template["metadata"] = {"annotations": job_annotations}
    if pod_annotations:
        template["spec"]["template"]["metadata"] = {"annotations": pod_annotations}
    meta: dict[str, Any] = {"name": "js", "namespace": "team"}
    if annotations:
        meta["annotations"] = annotations
    return {
        "apiVersion": "jobset.x-k8s.io/v1alpha2",
        "kind": "JobSet",
        "metadata": meta,
        "spec": {"replicatedJobs": [{"name": "w", "replicas": 2, "template": template}]},
    }


def container(
    name: str = "c",
    *,
    requests: dict[str, Any] | None = None,
    limits: dict[str, Any] | None = None,
    **extra: Any,
) -> dict[str, Any]:
    resources: dict[str, Any] = {}
    if requests:
        resources["requests"] = requests
    if limits:
        resources["limits"] = limits
    return {"name": name, "image": "busybox", "resources": resources, **extra}


# --- the upstream examples ----------------------------------------------------------------------


@pytest.mark.parametrize("path", EXAMPLES, ids=[p.stem for p in EXAMPLES])
def test_every_example_parses_and_keeps_its_manifest(path: Path) -> None:
    [js] = load_jobsets([path])
    raw = yaml.safe_load(path.read_text())
    assert js.name == raw["metadata"]["name"]
    assert js.source == str(path)
    assert [r.name for r in js.replicated_jobs] == [
        r["name"] for r in raw["spec"]["replicatedJobs"]
    ]
    assert js.manifest["spec"].keys() == raw["spec"].keys()
    assert all(r.pods_per_job >= 1 for r in js.replicated_jobs)


def test_unknown_fields_are_preserved() -> None:
    [js] = load_jobsets([DATA / "PR1250-scheduling_tpu-topology-gang.yaml"])
    assert js.manifest["spec"]["scheduling"]["schedulingConstraints"] == {
        "topology": [{"key": "cloud.google.com/gke-tpu-slice"}]
    }
    [js] = load_jobsets([DATA / "workload-aware-scheduling-tas_jobset.yaml"])
    pod = js.manifest["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]
    assert pod["schedulingGroup"] == {"podGroupName": "js-abc-workers-def"}


def test_canonical_tpu_example() -> None:
    [js] = load_jobsets([DATA / "tpu-v5e-multislice.yaml"])
    [rj] = js.replicated_jobs
    assert (js.key, rj.replicas, rj.pods_per_job) == ("default/multislice", 4, 2)
    assert rj.exclusive_key == "cloud.google.com/gke-nodepool"
    assert rj.pod.requests == {"google.com/tpu": Decimal(4)}
    assert rj.pod.node_selector == {
        "cloud.google.com/gke-tpu-accelerator": "tpu-v5-lite-podslice",
        "cloud.google.com/gke-tpu-topology": "2x4",
    }
    # hostNetwork: every containerPort is a host port
    assert rj.pod.host_ports == ((8080, "TCP"), (8471, "TCP"))
    assert js.accelerator_units == 32


def test_directory_is_read_in_sorted_order_with_order_numbers(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    for name, where in (("b", "b.yaml"), ("a", "sub/a.yml"), ("c", "c.json")):
        m = manifest()
        m["metadata"]["name"] = name
        text = json.dumps(m) if where.endswith(".json") else yaml.safe_dump(m)
        (tmp_path / where).write_text(text)
    (tmp_path / "notes.txt").write_text("not a manifest")
    jobsets = load_jobsets([tmp_path])
    assert [(j.name, j.order) for j in jobsets] == [("b", 0), ("c", 1), ("a", 2)]


def test_multi_document_and_list_and_other_kinds(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    one, two, three = manifest(), manifest(), manifest()
    two["metadata"]["name"], three["metadata"]["name"] = "two", "three"
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cfg"}}
    path = tmp_path / "all.yaml"
    path.write_text(
        yaml.safe_dump_all([one, cm, {"apiVersion": "v1", "kind": "List", "items": [two, three]}])
    )
    with caplog.at_level(logging.WARNING):
        jobsets = load_jobsets([path])
    assert [j.name for j in jobsets] == ["js", "two", "three"]
    assert [j.order for j in jobsets] == [0, 1, 2]
    skipped = [r for r in caplog.records if "skipping" in r.getMessage()]
    assert len(skipped) == 1 and "ConfigMap default/cfg" in skipped[0].getMessage()


# --- defaults and counts ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("job", "expected"),
    [
        pytest.param({}, 1, id="defaults"),
        pytest.param({"parallelism": 4}, 4, id="completions-default-to-parallelism"),
        pytest.param({"parallelism": 4, "completions": 2}, 2, id="completions-smaller"),
        pytest.param({"parallelism": 2, "completions": 8}, 2, id="parallelism-smaller"),
        pytest.param({"completions": 3}, 1, id="parallelism-default-1"),
        pytest.param({"parallelism": 0}, 0, id="zero"),
    ],
)
def test_pods_per_job(job: dict[str, Any], expected: int) -> None:
    assert parse_jobset(manifest(**job)).replicated_jobs[0].pods_per_job == expected


def test_replicas_and_group_defaults() -> None:
    m = manifest()
    del m["spec"]["replicatedJobs"][0]["replicas"]
    js = parse_jobset(m)
    assert (js.replicated_jobs[0].replicas, js.replicated_jobs[0].group_name) == (1, "default")
    m["spec"]["replicatedJobs"][0].update(replicas=0, groupName="g")
    js = parse_jobset(m)
    assert (js.replicated_jobs[0].replicas, js.replicated_jobs[0].group_name) == (0, "g")


def test_metadata_defaults_and_identity() -> None:
    m = manifest()
    del m["metadata"]["namespace"]
    js = parse_jobset(m, source="x.yaml", order=7)
    assert (js.namespace, js.uid, js.creation_timestamp, js.order, js.source) == (
        "default",
        "",
        None,
        7,
        "x.yaml",
    )
    m["metadata"].update(uid="u-1", creationTimestamp="2026-01-02T03:04:05Z")
    js = parse_jobset(m)
    assert js.uid == "u-1"
    assert js.creation_timestamp is not None and js.creation_timestamp.year == 2026
    assert js.manifest == m


# --- requests -----------------------------------------------------------------------------------


REQUEST_CASES = [
    pytest.param(
        {"containers": [container(limits={"google.com/tpu": 4})]},
        {"google.com/tpu": 4},
        id="limits-only",
    ),
    pytest.param(
        {"containers": [container(requests={"cpu": "1"}, limits={"cpu": "2", "memory": "1Gi"})]},
        {"cpu": 1, "memory": 2**30},
        id="requests-win-over-limits",
    ),
    pytest.param(
        {
            "containers": [
                container("a", requests={"cpu": "500m"}),
                container("b", requests={"cpu": "1500m"}),
            ]
        },
        {"cpu": 2},
        id="containers-add",
    ),
    pytest.param(
        {
            "containers": [container(requests={"cpu": "1"})],
            "initContainers": [container("init", requests={"cpu": "4"})],
        },
        {"cpu": 4},
        id="init-container-peak",
    ),
    pytest.param(
        {
            "containers": [container(requests={"cpu": "3"})],
            "initContainers": [container("init", requests={"cpu": "2"})],
        },
        {"cpu": 3},
        id="init-container-below-app",
    ),
    pytest.param(
        {
            "containers": [container(requests={"cpu": "1"})],
            "initContainers": [container("side", requests={"cpu": "1"}, restartPolicy="Always")],
        },
        {"cpu": 2},
        id="sidecar-adds",
    ),
    pytest.param(
        {
            "containers": [container(requests={"cpu": "1"})],
            "initContainers": [
                container("side", requests={"cpu": "1"}, restartPolicy="Always"),
                container("init", requests={"cpu": "2"}),
            ],
        },
        {"cpu": 3},
        id="init-after-sidecar-counts-both",
    ),
    pytest.param(
        {
            "containers": [container(requests={"cpu": "1"})],
            "overhead": {"cpu": "250m", "memory": "64Mi"},
        },
        {"cpu": Decimal("1.25"), "memory": 64 * 2**20},
        id="overhead",
    ),
    pytest.param({"containers": [container(requests={"cpu": "0"})]}, {}, id="zero-dropped"),
]


@pytest.mark.parametrize(("pod_spec", "expected"), REQUEST_CASES)
def test_pod_requests(pod_spec: dict[str, Any], expected: dict[str, Any]) -> None:
    rj = parse_jobset(manifest(pod_spec)).replicated_jobs[0]
    assert rj.pod.requests == {k: Decimal(v) for k, v in expected.items()}


# --- scheduling constraints ---------------------------------------------------------------------


def _affinity(*terms: dict[str, Any]) -> dict[str, Any]:
    return {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": list(terms)}
        }
    }


@pytest.mark.parametrize(
    ("expr", "expected"),
    [
        pytest.param({"key": "k", "operator": "In", "values": ["a", "b"]}, ("a", "b"), id="In"),
        pytest.param({"key": "k", "operator": "NotIn", "values": ["a"]}, ("a",), id="NotIn"),
        pytest.param({"key": "k", "operator": "Exists"}, (), id="Exists"),
        pytest.param({"key": "k", "operator": "DoesNotExist"}, (), id="DoesNotExist"),
        pytest.param({"key": "k", "operator": "Gt", "values": ["3"]}, ("3",), id="Gt"),
        pytest.param({"key": "k", "operator": "Lt", "values": ["10"]}, ("10",), id="Lt"),
    ],
)
def test_affinity_operators(expr: dict[str, Any], expected: tuple[str, ...]) -> None:
    spec = {"containers": [container()], "affinity": _affinity({"matchExpressions": [expr]})}
    [term] = parse_jobset(manifest(spec)).replicated_jobs[0].pod.affinity_terms
    assert term == NodeSelectorTerm(
        match_expressions=(
            NodeSelectorRequirement(key="k", operator=expr["operator"], values=expected),
        )
    )


def test_affinity_terms_are_ored_and_match_fields_kept() -> None:
    spec = {
        "containers": [container()],
        "affinity": _affinity(
            {"matchExpressions": [{"key": "a", "operator": "Exists"}]},
            {"matchFields": [{"key": "metadata.name", "operator": "NotIn", "values": ["n1"]}]},
        ),
    }
    terms = parse_jobset(manifest(spec)).replicated_jobs[0].pod.affinity_terms
    assert len(terms) == 2
    assert terms[1].match_node_names == (
        NodeSelectorRequirement(key="metadata.name", operator="NotIn", values=("n1",)),
    )
    assert terms[1].match_expressions == ()


@pytest.mark.parametrize("required", [{}, {"nodeSelectorTerms": []}])
def test_a_required_node_affinity_needs_a_term(required: dict[str, Any]) -> None:
    affinity = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": required}}
    with pytest.raises(InputError) as e:
        parse_jobset(manifest({"containers": [container()], "affinity": affinity}))
    assert e.value.message == "must have at least one node selector term"
    assert e.value.field.endswith(
        "requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms"
    )


@pytest.mark.parametrize(
    ("term", "field", "words"),
    [
        pytest.param(
            {"matchExpressions": [{"key": "k", "operator": "In"}]},
            "nodeSelectorTerms[0].matchExpressions[0]",
            "at least one value",
            id="In-empty",
        ),
        pytest.param(
            {"matchExpressions": [{"key": "k", "operator": "Exists", "values": ["x"]}]},
            "nodeSelectorTerms[0].matchExpressions[0]",
            "takes no values",
            id="Exists-values",
        ),
        pytest.param(
            {"matchExpressions": [{"key": "k", "operator": "NotIn", "values": []}]},
            "nodeSelectorTerms[0].matchExpressions[0]",
            "NotIn needs at least one value",
            id="NotIn-empty",
        ),
        pytest.param(
            {"matchExpressions": [{"key": "k", "operator": "DoesNotExist", "values": ["x"]}]},
            "nodeSelectorTerms[0].matchExpressions[0]",
            "DoesNotExist takes no values",
            id="DoesNotExist-values",
        ),
        pytest.param(
            {"matchExpressions": [{"key": "k", "operator": "Gt", "values": ["1", "2"]}]},
            "nodeSelectorTerms[0].matchExpressions[0]",
            "Gt needs exactly one value",
            id="Gt-two-values",
        ),
        pytest.param(
            {"matchFields": [{"key": "metadata.name", "operator": "Exists"}]},
            "nodeSelectorTerms[0].matchFields[0].operator",
            "only In and NotIn",
            id="field-operator",
        ),
        pytest.param(
            {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n1", "n2"]}]},
            "nodeSelectorTerms[0].matchFields[0].values",
            "exactly one node name, got 2",
            id="field-two-names",
        ),
        pytest.param(
            {"matchFields": [{"key": "metadata.name", "operator": "NotIn", "values": []}]},
            "nodeSelectorTerms[0].matchFields[0].values",
            "exactly one node name, got 0",
            id="field-no-name",
        ),
        pytest.param(
            {"matchExpressions": [{"key": "k", "operator": "Near", "values": ["x"]}]},
            "nodeSelectorTerms[0].matchExpressions[0].operator",
            "",
            id="bad-operator",
        ),
        pytest.param(
            {"matchFields": [{"key": "metadata.labels", "operator": "In", "values": ["x"]}]},
            "nodeSelectorTerms[0].matchFields[0].key",
            "metadata.name",
            id="field-key",
        ),
    ],
)
def test_affinity_errors(term: dict[str, Any], field: str, words: str) -> None:
    spec = {"containers": [container()], "affinity": _affinity(term)}
    with pytest.raises(InputError) as e:
        parse_jobset(manifest(spec), source="f.yaml")
    assert e.value.field.endswith(field)
    assert e.value.field.startswith("spec.replicatedJobs[0].template.spec.template.spec.affinity")
    assert words in e.value.message
    assert (e.value.source, e.value.obj) == ("f.yaml", "team/js")


@pytest.mark.parametrize("value", ["x", "1.5", "1_000", "9223372036854775808"])
def test_a_gt_value_that_go_does_not_read_as_an_integer_makes_its_term_match_nothing(
    value: str,
) -> None:
    """The API server takes any label value; kube-scheduler's `labels.NewRequirement` reads it
    with `strconv.ParseInt`, fails, and that term matches no node while the others still may."""
    broken = {"matchExpressions": [{"key": "gen", "operator": "Gt", "values": [value]}]}
    sound = {"matchExpressions": [{"key": "pool", "operator": "In", "values": ["p1"]}]}
    spec = {"containers": [container()], "affinity": _affinity(broken, sound)}
    (replicated,) = parse_jobset(manifest(spec), source="f.yaml").replicated_jobs
    first, second = replicated.pod.affinity_terms
    for labels in ({"gen": "9223372036854775807"}, {"gen": "2000"}, {"gen": value}):
        assert not matches_term(labels, "n1", first)
    assert matches_term({"pool": "p1", "gen": "2000"}, "n1", second)


@pytest.mark.parametrize(
    ("toleration", "field", "message"),
    [
        pytest.param(
            {"operator": "Equal", "value": "v"}, "operator",
            "must be Exists when key is empty (a toleration of every taint)", id="no-key-equal",
        ),
        pytest.param(
            {"key": "k", "operator": "Exists", "value": "v"}, "value",
            "must be empty when operator is Exists", id="exists-with-value",
        ),
        pytest.param(
            {"key": "k", "effect": "NoSchedule", "tolerationSeconds": 60}, "effect",
            "must be NoExecute when tolerationSeconds is set", id="seconds-not-noexecute",
        ),
    ],
)  # fmt: skip
def test_tolerations_follow_the_api_server(
    toleration: dict[str, Any], field: str, message: str
) -> None:
    spec = {"containers": [container()], "tolerations": [toleration]}
    with pytest.raises(InputError) as e:
        parse_jobset(manifest(spec), source="f.yaml")
    where = "spec.replicatedJobs[0].template.spec.template.spec.tolerations[0]"
    assert (e.value.field, e.value.message) == (f"{where}.{field}", message)


def test_node_selector_and_tolerations() -> None:
    spec = {
        "containers": [container()],
        "nodeSelector": {"pool": "p1"},
        "tolerations": [
            {"key": "google.com/tpu", "operator": "Exists", "effect": "NoSchedule"},
            {"key": "dedicated", "value": "ml"},
            {"operator": "Exists"},
        ],
    }
    pod = parse_jobset(manifest(spec)).replicated_jobs[0].pod
    assert pod.node_selector == {"pool": "p1"}
    assert pod.tolerations == (
        Toleration(key="google.com/tpu", operator="Exists", effect="NoSchedule"),
        Toleration(key="dedicated", operator="Equal", value="ml"),
        Toleration(operator="Exists"),
    )


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        pytest.param(
            {"containers": [container(ports=[{"containerPort": 80}])]}, (), id="container-port-only"
        ),
        pytest.param(
            {"containers": [container(ports=[{"containerPort": 80, "hostPort": 8080}])]},
            ((8080, "TCP"),),
            id="explicit-host-port",
        ),
        pytest.param(
            {
                "hostNetwork": True,
                "containers": [
                    container(
                        ports=[{"containerPort": 53, "protocol": "UDP"}, {"containerPort": 80}]
                    )
                ],
            },
            ((53, "UDP"), (80, "TCP")),
            id="host-network",
        ),
        pytest.param(
            {
                "containers": [container()],
                "initContainers": [
                    container(
                        "side", restartPolicy="Always", ports=[{"containerPort": 9, "hostPort": 9}]
                    )
                ],
            },
            ((9, "TCP"),),
            id="sidecar-port",
        ),
    ],
)
def test_host_ports(spec: dict[str, Any], expected: tuple[tuple[int, str], ...]) -> None:
    assert parse_jobset(manifest(spec)).replicated_jobs[0].pod.host_ports == expected


def test_priority(caplog: pytest.LogCaptureFixture) -> None:
    classes = PriorityClasses({"high": 1000})
    explicit = {"containers": [container()], "priority": 1000, "priorityClassName": "high"}
    assert parse_jobset(manifest(explicit), priorities=classes).priority == 1000
    named = {"containers": [container()], "priorityClassName": "high"}
    assert parse_jobset(manifest(named), priorities=classes).priority == 1000
    assert parse_jobset(manifest()).priority == 0
    # the API server's own classes exist even where a description leaves them out
    system = {"containers": [container()], "priorityClassName": "system-node-critical"}
    assert parse_jobset(manifest(system), priorities=classes).priority == 2_000_001_000
    # a pod states one of the two policies, whatever the classes (the API server's validation)
    with pytest.raises(InputError, match="must be PreemptLowerPriority or Never, got 'Sometimes'"):
        parse_jobset(manifest({"containers": [container()], "preemptionPolicy": "Sometimes"}))
    # the classes not read (a snapshot without them): the template is taken at its word
    unread = {"containers": [container()], "priority": 7, "priorityClassName": "high"}
    assert parse_jobset(manifest(unread)).priority == 7
    unknown = {"containers": [container()], "priorityClassName": "nope"}
    with caplog.at_level(logging.WARNING):
        assert parse_jobset(manifest(unknown)).priority == 0
    assert any("'nope' is unknown" in r.getMessage() for r in caplog.records)


POD_FIELD = "spec.replicatedJobs[0].template.spec.template.spec"


@pytest.mark.parametrize(
    ("pod", "field", "words"),
    [
        ({"priorityClassName": "nope"}, "priorityClassName", "no PriorityClass 'nope'"),
        ({"priorityClassName": "high", "priority": 7}, "priority", "7 differs from 1000"),
        ({"priorityClassName": "high", "priority": 0}, "priority", "0 differs from 1000"),
        ({"priority": 7}, "priority", "of a pod naming no PriorityClass"),
        ({"priorityClassName": "high", "preemptionPolicy": "Never"}, "preemptionPolicy", "high"),
        (
            {"priorityClassName": "batch", "preemptionPolicy": "PreemptLowerPriority"},
            "preemptionPolicy",
            "Never, the",
        ),
        ({"preemptionPolicy": "Never"}, "preemptionPolicy", "PreemptLowerPriority, the policy"),
    ],
)
def test_a_template_the_priority_admission_plugin_refuses_is_refused(
    pod: dict[str, Any], field: str, words: str
) -> None:
    """The Priority admission plugin refuses to create such pods: a JobSet whose Jobs can never
    start a pod is not planned (tests/cluster/test_priority_rules.py asks the real API server)."""
    classes = PriorityClasses({"high": 1000, "batch": 10}, non_preempting=frozenset({"batch"}))
    with pytest.raises(InputError, match=re.escape(words)) as refused:
        parse_jobset(manifest({"containers": [container()], **pod}), priorities=classes)
    assert refused.value.field == f"{POD_FIELD}.{field}"
    assert "Priority admission plugin refuses" in str(refused.value)


def test_a_template_naming_no_class_gets_the_clusters_default() -> None:
    """As the Priority admission plugin does: the `globalDefault` class's value and name (and so
    its preemption policy), unless the template names a class."""
    classes = PriorityClasses({"standard": 500, "low": 100})
    standard = PriorityClasses(classes.values, "standard")
    plain = parse_jobset(manifest(), priorities=standard)
    assert (plain.priority, plain.priority_class_name) == (500, "standard")
    low = {"containers": [container()], "priorityClassName": "low"}
    named = parse_jobset(manifest(low), priorities=standard)
    assert (named.priority, named.priority_class_name) == (100, "low")
    stated = {"containers": [container()], "priority": 500}
    assert parse_jobset(manifest(stated), priorities=standard).priority == 500
    with pytest.raises(InputError, match="the value of PriorityClass 'standard', the cluster's de"):
        parse_jobset(manifest({**stated, "priority": 7}), priorities=standard)
    assert parse_jobset(manifest(), priorities=classes).priority == 0


def test_class_name_and_never_preempting_come_from_any_replicated_job() -> None:
    """The first replicatedJob naming a priority class names the JobSet's; one replicatedJob
    that never preempts makes the JobSet never preempt (it is evicted and placed whole)."""
    m = manifest({"containers": [container()]})
    second = copy.deepcopy(m["spec"]["replicatedJobs"][0])
    second["name"] = "driver"
    pod = second["template"]["spec"]["template"]["spec"]
    pod.update(priorityClassName="high", preemptionPolicy="Never")
    m["spec"]["replicatedJobs"].append(second)
    js = parse_jobset(
        m, priorities=PriorityClasses({"high": 10}, non_preempting=frozenset({"high"}))
    )
    assert (js.priority_class_name, js.never_preempts, js.priority) == ("high", True, 10)
    assert parse_jobset(manifest()).never_preempts is False


def _replicated(name: str, replicas: int, **job: Any) -> dict[str, Any]:
    entry = manifest(**job)["spec"]["replicatedJobs"][0]
    return {**entry, "name": name, "replicas": replicas}


def test_the_pod_limit_counts_what_each_child_job_runs_at_once() -> None:
    """A Job runs min(parallelism, completions) pods at once and counts as at least one (a Job
    of no pods is still an object to plan); the limit adds every replicatedJob's."""
    half = MAX_PODS_PER_JOBSET // 2 + 1
    m = manifest()
    m["spec"]["replicatedJobs"] = [_replicated("w", half, parallelism=4, completions=1)]
    assert parse_jobset(m).replicated_jobs[0].pods_per_job == 1  # under the limit: accepted
    m["spec"]["replicatedJobs"] = [_replicated("w", MAX_PODS_PER_JOBSET + 1, parallelism=0)]
    with pytest.raises(InputError, match="per JobSet"):
        parse_jobset(m)
    m["spec"]["replicatedJobs"] = [_replicated("a", half), _replicated("b", half)]
    with pytest.raises(InputError, match="per JobSet") as e:
        parse_jobset(m)
    assert e.value.field == "spec.replicatedJobs[1].replicas"


def test_priority_is_the_highest_replicated_job() -> None:
    m = manifest({"containers": [container()], "priority": 5})
    second = copy.deepcopy(m["spec"]["replicatedJobs"][0])
    second["name"] = "driver"
    second["template"]["spec"]["template"]["spec"]["priority"] = 50
    m["spec"]["replicatedJobs"].append(second)
    assert parse_jobset(m).priority == 50


@pytest.mark.parametrize(
    ("jobset_key", "job_key", "expected"),
    [
        pytest.param(None, None, None, id="none"),
        pytest.param("pool", None, "pool", id="jobset"),
        pytest.param(None, "block", "block", id="job-template"),
        pytest.param("pool", "block", "block", id="job-template-wins"),
    ],
)
def test_exclusive_key(jobset_key: str | None, job_key: str | None, expected: str | None) -> None:
    key = "alpha.jobset.sigs.k8s.io/exclusive-topology"
    m = manifest(
        annotations={key: jobset_key} if jobset_key else None,
        job_annotations={key: job_key} if job_key else None,
    )
    assert parse_jobset(m).replicated_jobs[0].exclusive_key == expected


def test_node_selector_strategy_flag() -> None:
    ann = {"alpha.jobset.sigs.k8s.io/exclusive-topology": "pool"}
    assert not parse_jobset(manifest(annotations=ann)).node_selector_strategy
    ann["alpha.jobset.sigs.k8s.io/node-selector"] = "true"
    assert parse_jobset(manifest(annotations=ann)).node_selector_strategy


def test_kueue_topology_annotations_come_from_the_pod_template() -> None:
    kueue = {
        "kueue.x-k8s.io/podset-required-topology": "block",
        "kueue.x-k8s.io/podset-slice-required-topology": "rack",
        "kueue.x-k8s.io/podset-slice-size": "1",
    }
    rj = parse_jobset(manifest(pod_annotations=kueue)).replicated_jobs[0]
    assert (rj.required_topology, rj.slice_topology) == ("block", "rack")
    # on the Job template they are not Kueue's podset annotations
    rj = parse_jobset(manifest(job_annotations=kueue)).replicated_jobs[0]
    assert (rj.required_topology, rj.slice_topology) == (None, None)


# --- errors -------------------------------------------------------------------------------------


def test_negative_replicas_names_file_object_and_field(tmp_path: Path) -> None:
    m = manifest()
    m["spec"]["replicatedJobs"][0]["replicas"] = -1
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(m))
    with pytest.raises(InputError) as e:
        load_jobsets([path])
    assert (e.value.source, e.value.obj, e.value.field) == (
        str(path),
        "team/js",
        "spec.replicatedJobs[0].replicas",
    )
    assert str(path) in str(e.value) and "spec.replicatedJobs[0].replicas" in str(e.value)
    assert isinstance(e.value, ValueError)


@pytest.mark.parametrize(
    ("mutate", "field"),
    [
        pytest.param(
            lambda m: m["spec"]["replicatedJobs"][0].update(replicas="3"),
            "spec.replicatedJobs[0].replicas",
            id="replicas-string",
        ),
        pytest.param(
            lambda m: m["spec"].update(replicatedJobs=[]),
            "spec.replicatedJobs",
            id="no-replicated-jobs",
        ),
        pytest.param(
            lambda m: m["spec"]["replicatedJobs"][0]["template"]["spec"].update(parallelism=-2),
            "spec.replicatedJobs[0].template.spec.parallelism",
            id="parallelism",
        ),
        pytest.param(
            lambda m: m["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"].update(
                containers=[]
            ),
            "spec.replicatedJobs[0].template.spec.template.spec.containers",
            id="no-containers",
        ),
        pytest.param(
            lambda m: m["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"][
                "containers"
            ][0].update(resources={"limits": {"cpu": "lots"}}),
            "spec.replicatedJobs[0].template.spec.template.spec.containers[0].resources.limits.cpu",
            id="bad-quantity",
        ),
        pytest.param(
            lambda m: m["metadata"].update(annotations={"a": 1}),
            "metadata.annotations.a",
            id="annotation-not-string",
        ),
        pytest.param(
            lambda m: m["spec"]["replicatedJobs"].append(
                copy.deepcopy(m["spec"]["replicatedJobs"][0])
            ),
            "spec.replicatedJobs[1].name",
            id="duplicate-name",
        ),
    ],
)
def test_schema_errors_name_the_field(mutate: Any, field: str) -> None:
    m = manifest()
    mutate(m)
    with pytest.raises(InputError) as e:
        parse_jobset(m, source="s.yaml")
    assert (e.value.source, e.value.obj, e.value.field) == ("s.yaml", "team/js", field)


def test_file_without_jobsets_is_an_error(tmp_path: Path) -> None:
    path = tmp_path / "cm.yaml"
    path.write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n")
    with pytest.raises(InputError, match="contains no JobSet") as e:
        load_jobsets([path])
    assert e.value.source == str(path)


def test_yaml_syntax_error_has_line(tmp_path: Path) -> None:
    path = tmp_path / "broken.yaml"
    path.write_text("kind: JobSet\nmetadata:\n  name: x\n  labels: {a: [1, 2}\n")
    with pytest.raises(InputError) as e:
        load_jobsets([path])
    assert e.value.source == str(path)
    assert "line 4" in e.value.message and e.value.code == "syntax"


def test_json_syntax_error_has_line(tmp_path: Path) -> None:
    path = tmp_path / "broken.json"
    path.write_text('{\n "kind": "JobSet",\n "metadata": }\n')
    with pytest.raises(InputError, match="line 3") as e:
        load_jobsets([path])
    assert e.value.source == str(path)


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="no such file") as e:
        load_jobsets([tmp_path / "nope.yaml"])
    assert e.value.source == str(tmp_path / "nope.yaml")


def test_duplicate_jobset_across_files(tmp_path: Path) -> None:
    for name in ("a.yaml", "b.yaml"):
        (tmp_path / name).write_text(yaml.safe_dump(manifest()))
    with pytest.raises(InputError, match="defined twice") as e:
        load_jobsets([tmp_path])
    assert (e.value.source, e.value.obj) == (str(tmp_path / "b.yaml"), "team/js")
    assert str(tmp_path / "a.yaml") in str(e.value)
    assert "give only one of the two files, or rename one" in str(e.value)


def test_directory_with_a_jobset_and_another_kind_loads(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    (tmp_path / "jobset.yaml").write_text(yaml.safe_dump(manifest()))
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cfg"}}
    (tmp_path / "configmap.yaml").write_text(yaml.safe_dump(cm))
    with caplog.at_level(logging.WARNING):
        jobsets = load_jobsets([tmp_path])
    assert [j.key for j in jobsets] == ["team/js"]
    skipped = [r.getMessage() for r in caplog.records if "skipping" in r.getMessage()]
    assert skipped == [
        f"{tmp_path / 'configmap.yaml'}: skipping ConfigMap default/cfg (not a JobSet)"
    ]
    with pytest.raises(InputError, match="contains no JobSet") as e:
        load_jobsets([tmp_path / "jobset.yaml", tmp_path / "configmap.yaml"])
    assert e.value.source == str(tmp_path / "configmap.yaml")


def test_an_object_without_a_name_is_named_once(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "mixed.yaml"
    path.write_text(yaml.safe_dump_all([manifest(), {"kind": "NodePoolCatalog", "poolTypes": []}]))
    with caplog.at_level(logging.WARNING):
        load_jobsets([path])
    assert [r.getMessage() for r in caplog.records] == [
        f"{path}: skipping NodePoolCatalog (not a JobSet)"
    ]


def test_document_that_is_not_an_object(tmp_path: Path) -> None:
    path = tmp_path / "list.yaml"
    path.write_text("- a\n- b\n")
    with pytest.raises(InputError, match="not an object"):
        load_jobsets([path])


HOST_ANTI_AFFINITY = {
    "podAntiAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": [
            {
                "labelSelector": {"matchLabels": {"app": "x"}},
                "topologyKey": "kubernetes.io/hostname",
            }
        ]
    }
}
SPREAD = {"maxSkew": 1, "topologyKey": "kubernetes.io/hostname", "labelSelector": {}}


@pytest.mark.parametrize(
    ("extra", "warned"),
    [
        pytest.param({"affinity": HOST_ANTI_AFFINITY}, ["affinity.podAntiAffinity"], id="anti"),
        pytest.param(
            {"affinity": {"podAffinity": HOST_ANTI_AFFINITY["podAntiAffinity"]}},
            ["affinity.podAffinity"],
            id="affinity",
        ),
        pytest.param(
            {
                "affinity": {
                    "podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": []}
                }
            },
            [],
            id="preferred-only",
        ),
        pytest.param(
            {"topologySpreadConstraints": [SPREAD]}, ["topologySpreadConstraints"], id="spread"
        ),
        pytest.param(
            {"topologySpreadConstraints": [{**SPREAD, "whenUnsatisfiable": "ScheduleAnyway"}]},
            [],
            id="spread-anyway",
        ),
    ],
)
def test_hard_pod_constraints_placer_does_not_model_are_named_in_a_warning(
    caplog: pytest.LogCaptureFixture, extra: dict[str, Any], warned: list[str]
) -> None:
    spec = {"containers": [container()], **extra}
    with caplog.at_level(logging.WARNING):
        parse_jobset(manifest(spec), source="f.yaml")
    messages = [r.getMessage() for r in caplog.records if "not modeled" in r.getMessage()]
    assert len(messages) == len(warned)
    for message, constraint in zip(messages, warned, strict=True):
        assert message.startswith(
            f"f.yaml: team/js: spec.replicatedJobs[0].template.spec.template.spec.{constraint}"
        )


def test_annotations_are_limited_in_bytes_as_the_api_server_counts_them() -> None:
    """`ValidateAnnotationsSize` adds Go's `len` of keys and values: UTF-8 bytes, not characters
    (tests/cluster/test_jobset_rules.py asks the real API server the same)."""
    m = manifest()
    m["metadata"]["annotations"] = {"x": "a" * (256 * 1024 - 1)}
    parse_jobset(m)
    m["metadata"]["annotations"] = {"x": "\u00e9" * (128 * 1024)}  # fewer characters, more bytes
    with pytest.raises(InputError) as e:
        parse_jobset(m)
    assert (
        e.value.message == "262145 bytes of annotations (keys and values, in UTF-8); at most 262144"
    )
    assert e.value.field == "metadata.annotations"


def test_an_empty_toleration_operator_is_equal_and_an_empty_protocol_tcp() -> None:
    """The API server reads an empty toleration operator as `Equal` and defaults an empty port
    protocol to TCP (tests/cluster/test_resource_rules.py asks it)."""
    spec = {
        "containers": [{**container(), "ports": [{"containerPort": 80, "protocol": ""}]}],
        "hostNetwork": True,
        "tolerations": [{"key": "k", "operator": "", "value": "v"}],
    }
    pod = parse_jobset(manifest(spec)).replicated_jobs[0].pod
    assert pod.tolerations == (Toleration(key="k", operator="Equal", value="v"),)
    assert pod.host_ports == ((80, "TCP"),)


def test_nulls_read_as_go_reads_them() -> None:
    """A null field is the field left out and a null label value is "", as the API server's
    JSON decoding has them (Helm renders `tolerations:` with nothing after it as null); the
    manifest kept for the writers is left as given."""
    m = manifest({"containers": [{**container(), "ports": None, "resources": None}]})
    m["metadata"].update(labels={"team": None}, annotations=None)
    pod = m["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]
    pod.update(tolerations=None, nodeSelector=None, hostNetwork=None, initContainers=None)
    js = parse_jobset(m)
    shape = js.replicated_jobs[0].pod
    assert (shape.tolerations, shape.node_selector, shape.host_ports) == ((), {}, ())
    assert js.manifest["metadata"]["labels"] == {"team": None}
