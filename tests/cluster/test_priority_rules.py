"""Pod priorities as the real API server's Priority admission plugin settles them, and as placer
reads a JobSet's pod template.

Each case is a pod created with `dryRun=All` (admission runs, nothing is stored) beside two
PriorityClasses made for the test, one of them never preempting. placer reads the cluster's
classes as `placer plan --kubeconfig` does (`load_live_snapshot`) and the same spec as a JobSet's
pod template: the two verdicts must agree, and agree with the one written beside the case. A
template the plugin refuses is one whose Jobs can never create a pod, so placer must not plan it.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import AbstractContextManager
from typing import Any

import pytest

from placer.model.priorities import PriorityClasses
from placer.model.snapshots.live import load_live_snapshot
from tests.cluster.scenario import Scenario
from tests.cluster.test_gate_binding import multislice
from tests.cluster.verdicts import assert_agree, compare, placer_accepts_jobset, raw_dry_run
from tests.helpers.cli import run_cli

HIGH = "placer-rules-high"
BATCH = "placer-rules-batch"
DEFAULT = "placer-rules-default"


def _pod(**fields: Any) -> dict[str, Any]:
    return {"restartPolicy": "Never", "containers": [{"name": "c", "image": "x"}], **fields}


CASES: list[tuple[str, dict[str, Any], bool]] = [
    # (case, pod spec, the API server accepts it)
    ("class", _pod(priorityClassName=HIGH), True),
    ("class-and-its-value", _pod(priorityClassName=HIGH, priority=1000), True),
    ("class-and-another-value", _pod(priorityClassName=HIGH, priority=7), False),
    ("class-and-zero", _pod(priorityClassName=HIGH, priority=0), False),
    (
        "class-and-its-policy",
        _pod(priorityClassName=HIGH, preemptionPolicy="PreemptLowerPriority"),
        True,
    ),
    ("class-and-never", _pod(priorityClassName=HIGH, preemptionPolicy="Never"), False),
    ("never-class-and-never", _pod(priorityClassName=BATCH, preemptionPolicy="Never"), True),
    (
        "never-class-and-preempting",
        _pod(priorityClassName=BATCH, preemptionPolicy="PreemptLowerPriority"),
        False,
    ),
    ("never-class-and-its-value", _pod(priorityClassName=BATCH, priority=10), True),
    ("unknown-class", _pod(priorityClassName="placer-rules-none"), False),
    ("no-class", _pod(), True),
    ("no-class-and-zero", _pod(priority=0), True),
    ("no-class-and-a-value", _pod(priority=7), False),
    ("no-class-and-never", _pod(preemptionPolicy="Never"), False),
    ("no-class-and-preempting", _pod(preemptionPolicy="PreemptLowerPriority"), True),
    ("no-class-and-another-policy", _pod(preemptionPolicy="Sometimes"), False),
    ("no-class-and-empty-policy", _pod(preemptionPolicy=""), False),
]


def _made(
    scenario: Scenario, classes: list[tuple[str, int, dict[str, Any]]]
) -> AbstractContextManager[None]:
    """`classes` (name, value, other fields) made for the length of a `with` block."""
    return scenario.priority_classes(
        {
            "apiVersion": "scheduling.k8s.io/v1",
            "kind": "PriorityClass",
            "metadata": {"name": name},
            "value": value,
            **fields,
        }
        for name, value, fields in classes
    )


@pytest.fixture
def classes(scenario: Scenario) -> Iterator[Scenario]:
    """HIGH (1000) and BATCH (10, never preempting)."""
    with _made(scenario, [(HIGH, 1000, {}), (BATCH, 10, {"preemptionPolicy": "Never"})]):
        yield scenario


def _placer_accepts(spec: dict[str, Any], priorities: PriorityClasses) -> bool:
    rjob = {"name": "w", "template": {"spec": {"template": {"spec": spec}}}}
    jobset = {"kind": "JobSet", "metadata": {"name": "probe"}, "spec": {"replicatedJobs": [rjob]}}
    return placer_accepts_jobset(jobset, priorities)


def test_placer_refuses_exactly_the_templates_priority_admission_refuses(
    classes: Scenario,
) -> None:
    scenario = classes
    priorities = load_live_snapshot(str(scenario.admin)).priorities
    assert priorities.default is None  # the no-class cases assume no globalDefault class
    assert priorities.non_preempting >= {BATCH} and HIGH not in priorities.non_preempting
    _assert_agree(scenario, CASES, priorities)


DEFAULT_CASES: list[tuple[str, dict[str, Any], bool]] = [
    # (case, pod spec, the API server accepts it) with a globalDefault class of 300
    ("no-class", _pod(), True),
    ("no-class-and-the-defaults-value", _pod(priority=300), True),
    ("no-class-and-zero", _pod(priority=0), False),
    ("no-class-and-never", _pod(preemptionPolicy="Never"), False),
    ("the-default-named-and-its-value", _pod(priorityClassName=DEFAULT, priority=300), True),
    ("another-class-and-its-value", _pod(priorityClassName=HIGH, priority=1000), True),
    ("another-class-and-the-defaults-value", _pod(priorityClassName=HIGH, priority=300), False),
]


def test_a_template_naming_no_class_is_judged_by_the_default_class(classes: Scenario) -> None:
    """A pod naming no class gets the `globalDefault` one's value and policy, as placer reads it."""
    scenario = classes
    with _made(scenario, [(DEFAULT, 300, {"globalDefault": True})]):
        priorities = load_live_snapshot(str(scenario.admin)).priorities
        assert priorities.default == DEFAULT
        _assert_agree(scenario, DEFAULT_CASES, priorities)


def _assert_agree(
    scenario: Scenario, cases: list[tuple[str, dict[str, Any], bool]], priorities: PriorityClasses
) -> None:
    """Each pod spec dry-run by the API server and read by placer as a JobSet's template."""
    path = f"/api/v1/namespaces/{scenario.namespace}/pods"

    def api_accepts(spec: dict[str, Any]) -> bool:
        body = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "probe"}, "spec": spec}
        return raw_dry_run(scenario.core.api_client, path, body)

    said, written = compare(cases, [], api_accepts, lambda spec: _placer_accepts(spec, priorities))
    assert_agree(said, written)


def test_explain_of_a_jobset_whose_pods_admission_refuses_names_the_field(
    classes: Scenario, capsys: pytest.CaptureFixture[str]
) -> None:
    """The JobSet is in the cluster (nothing refuses a JobSet for its template's priority), but
    its Jobs can never create a pod: `placer explain --kubeconfig` answers why, naming the field,
    rather than not finding it in the queue."""
    scenario = classes
    manifest = multislice("stated", 1)
    pod = manifest["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]
    pod.update(priorityClassName=HIGH, priority=7)
    manifest["spec"]["suspend"] = True  # no Job made: the question is placer's answer
    scenario.create_jobset(manifest)
    target = f"{scenario.namespace}/stated"
    code, _, err = run_cli(capsys, "explain", "--kubeconfig", scenario.admin, target)
    field = "spec.replicatedJobs[0].template.spec.template.spec.priority"
    assert code == 2 and err.count("\n") == 1, err
    assert f": {target}: {field}: 7 differs from 1000, the value of PriorityClass " in err
