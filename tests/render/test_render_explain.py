"""`placer explain`'s text at fleet scale: repeated reasons grouped, lines cut; JSON keeps all."""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from placer.model.plan import SolverReport
from placer.render.explain import (
    GROUP_AT,
    group_reasons,
    render_explanation,
    render_explanation_json,
)
from placer.solver.explain import Explanation, ReasonCount, ReplicatedJobDiagnosis


@dataclass(frozen=True)
class _Reason:
    kind: str
    count: int
    text: str
    jobsets: list[str] = field(default_factory=list)


def _held(n: int) -> list[ReasonCount]:
    return [
        ReasonCount(
            kind="held", count=1, text=f"held by running r/job-{k:03d}", jobsets=[f"r/job-{k:03d}"]
        )
        for k in range(n)
    ]


def test_many_reasons_of_one_kind_become_one_line() -> None:
    reasons = [
        *_held(324),
        ReasonCount(kind="node-selector", count=6, text="not matching nodeSelector a=b"),
        ReasonCount(kind="cordoned", count=1, text="too small: fits 3 of 4 pods (1 host cordoned)"),
    ]
    assert group_reasons(reasons) == [
        (324, "held by running JobSets: r/job-000, r/job-001, r/job-002 +321"),
        (6, "not matching nodeSelector a=b"),
        (1, "too small: fits 3 of 4 pods (1 host cordoned)"),
    ]


def test_a_few_reasons_of_one_kind_stay_as_they_are() -> None:
    reasons = _held(GROUP_AT)
    assert group_reasons(reasons) == [(1, r.text) for r in reasons]


def test_grouping_without_named_jobsets_lists_what_differs() -> None:
    reasons = [_Reason("taint", 2, f"untolerated taint t{k}=x:NoSchedule") for k in range(6)]
    assert group_reasons(reasons) == [
        (12, "untolerated taint: t0=x:NoSchedule, t1=x:NoSchedule, t2=x:NoSchedule +3")
    ]


def test_explanation_text_groups_and_fits_while_json_keeps_everything() -> None:
    diagnosis = ReplicatedJobDiagnosis(
        name="slice",
        exclusive_key="pool",
        replicas=2,
        pods_per_job=4,
        shape="{google.com/tpu: 4}",
        unit="domain",
        needed=2,
        available=0,
        total=324,
        reasons=_held(324),
        fits=False,
    )
    e = Explanation(
        jobset="a/t",
        status="unschedulable",
        replicated_jobs=[diagnosis],
        notes=["x" * 500],
        solver=SolverReport(name="cpsat", status="OPTIMAL"),
    )
    text = render_explanation(e, width=120)
    assert "    324  held by running JobSets: r/job-000, r/job-001, r/job-002 +321\n" in text
    assert text.count("held by running") == 1
    assert max(len(line) for line in text.splitlines()) <= 120
    assert len(render_explanation(e).splitlines()[-3]) > 500  # no width: nothing cut
    doc = json.loads(render_explanation_json(e))
    assert len(doc["replicated_jobs"][0]["reasons"]) == 324
