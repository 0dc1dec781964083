"""`benchmarks.wait_shift`: two trees' waits in one cell, set side by side per seed and per kind
of JobSet (the dump written by `benchmarks.who_waits --dump`)."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from benchmarks.wait_shift import main, shifts
from benchmarks.who_waits import dump, group
from benchmarks.worlds.simworld import HOUR
from tests.benchmarks.test_who_waits import QUEUE, _result, _spec

ONE = replace(_spec("e", 4, replicas=1), locality=None)
REQUIRED = replace(_spec("f", 5), locality="required")


def test_a_jobset_is_grouped_by_child_shape_width_and_locality() -> None:
    assert group(QUEUE[0]) == "gb200 16h wide"
    assert group(ONE) == "gb200 16h one"
    assert group(REQUIRED) == "gb200 16h wide required"
    # one child Job asks no locality, whatever its spec says (`JobSetSpec.to_request`)
    assert group(replace(ONE, locality="preferred")) == "gb200 16h one"


def test_per_seed_figures_and_each_kinds_mean_wait_move_with_the_change() -> None:
    queue = [*QUEUE, ONE]
    before = dump(queue, [_result("easy-aging", [1, 2, 3, 4, 10])], "seed 1")
    after = dump(queue, [_result("easy-aging", [3, 4, 5, 6, 0])], "seed 1")
    seeds, groups = shifts([(before, after), (before, before)], "easy-aging")
    assert [s.before[1] for s in seeds] == [10 * HOUR, 10 * HOUR]
    assert [s.after[1] for s in seeds] == [6 * HOUR, 10 * HOUR]
    assert seeds[0].after[2] == pytest.approx(18 / 5 * HOUR)
    # the wide ones wait 2 h longer in the changed seed and as long in the other; the one-child
    # JobSet 10 h less in the first
    by = {g.group: g for g in groups}
    assert (by["gb200 16h wide"].count, by["gb200 16h one"].count) == (8, 2)
    assert by["gb200 16h wide"].before_s == pytest.approx(2.5 * HOUR)
    assert by["gb200 16h wide"].after_s == pytest.approx(3.5 * HOUR)
    assert by["gb200 16h one"].after_s == pytest.approx(5 * HOUR)


def test_dumps_of_different_queues_are_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    a = tmp_path / "a.json"
    b = tmp_path / "b.json"
    a.write_text(json.dumps(dump(QUEUE, [_result("easy-aging", [1, 2, 3, 4])], "a")))
    b.write_text(json.dumps(dump(QUEUE[:3], [_result("easy-aging", [1, 2, 3])], "b")))
    assert main(["--before", str(a), "--after", str(b)]) == 2
    assert "not the same JobSets" in capsys.readouterr().err
    assert main(["--before", str(a), "--after", str(a)]) == 0
    out = capsys.readouterr().out
    assert "| gb200 16h wide | 4 | 2.50 | 2.50 |" in out
    assert main(["--before", str(a), "--after", str(a), "--policy", "cpsat-schedule"]) == 2
