"""The package's front door: load, solve and check the bundled example with only `placer.*`."""

from __future__ import annotations

from pathlib import Path

import placer

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def test_bundled_example_plans_through_the_public_api() -> None:
    snapshot = placer.load_snapshot([EXAMPLES / "clusters" / "tpu-v5e-v6e.yaml"])
    jobsets = placer.load_jobsets([EXAMPLES / "jobsets" / "tpu-v5e-multislice.yaml"])
    options = placer.SolveOptions(time_limit_s=5, workers=2)
    plan = placer.get_solver("cpsat").solve(snapshot, jobsets, options)
    assert placer.check(plan, snapshot, jobsets, options) == []
    outcome = plan.jobsets[0]
    assert outcome.status == "placed"
    assert len({j.domain.value for j in outcome.jobs if j.domain}) == 4


def test_bad_input_is_a_value_error_with_a_code() -> None:
    error = placer.InputError("bad", source="f.yaml", obj="ns/x", field="spec.replicas")
    assert isinstance(error, ValueError) and isinstance(error, placer.PlacerError)
    assert str(error) == "f.yaml: ns/x: spec.replicas: bad"
