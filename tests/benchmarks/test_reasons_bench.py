"""The reasons benchmark end to end on a small fleet, so it cannot rot (no timing checked):
the same reasons with the collector paused (the default, its collection timed apart) and
running."""

from __future__ import annotations

import re

import pytest

from benchmarks.reasons_bench import main

SMALL = ["--nodes", "400", "--pending", "40", "--shared", "6", "--held", "0.6"]


def _digests(out: str) -> list[str]:
    return re.findall(r"digest ([0-9a-f]{12})", out)


@pytest.mark.parametrize("reservations", ["none", "all"])
def test_the_reasons_are_the_same_with_the_collector_paused_or_running(
    reservations: str, capsys: pytest.CaptureFixture[str]
) -> None:
    main([*SMALL, "--reservations", reservations])
    paused = capsys.readouterr().out
    main([*SMALL, "--reservations", reservations, "--collector", "running"])
    running = capsys.readouterr().out
    assert "left out" in paused
    assert paused.count("then a collection") == 2 and "then a collection" not in running
    assert len(_digests(paused)) == 2 and _digests(paused) == _digests(running)
