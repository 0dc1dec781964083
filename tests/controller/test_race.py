"""Concurrent controllers over HTTP: a few seeded trials of tests/controller/race.py in CI.

Each trial runs two or three controllers at once against the API-server stand-in and judges the
API server's history: no block is ever released to two child Jobs at once, and every JobSet that
fits ends up placed. `python -m benchmarks.controller_race` runs the same trials by the hundred.
"""

from __future__ import annotations

import pytest

from tests.controller.race import draw_trial, run_trial


@pytest.mark.parametrize(
    ("seed", "elected"),
    [
        pytest.param(1, False, id="three-once-runs-cpsat-greedy-namespaced"),
        pytest.param(8, False, id="once-and-two-long-running-namespaced"),
        pytest.param(7, True, id="leader-cut-off-mid-cycle-and-once"),
    ],
)
def test_concurrent_controllers_never_share_a_block(seed: int, elected: bool) -> None:
    trial = draw_trial(seed, elected=elected)
    assert len(trial.roles) >= 2
    result = run_trial(trial)
    assert result.double_placements == []
    assert result.unplaced == []
    assert result.placed > 0
    if elected:  # the lease expired while its holder was planning; the other replica took over
        assert trial.cut_leader_at_s is not None and result.leaders == 2
