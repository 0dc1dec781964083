"""Progress: drawn only on a terminal and only after the delay; engines report through a hook."""

from __future__ import annotations

import io
import time

from placer.model.options import SolveOptions
from placer.render.progress import TerminalProgress, progress_line
from placer.solver.explain import ExplainSettings, explain_jobset
from tests.strategies import cluster, jobset, pool, rjob


class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


class _Recorder:
    def __init__(self) -> None:
        self.events: list[tuple[str, ...]] = []

    def phase(self, name: str) -> None:
        self.events.append(("phase", name))

    def step(self, done: int, total: int, what: str) -> None:
        self.events.append(("step", str(done), str(total)))


def _wait_for_output(stream: io.StringIO, timeout_s: float = 5.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not stream.getvalue() and time.monotonic() < deadline:
        time.sleep(0.05)


def test_progress_line_shows_phase_bar_and_count() -> None:
    line = progress_line("placer explain", "remedies", 6, 24, "re-plan 7", 12.4, 120)
    assert line == "placer explain: remedies [#####...............] 6/24 re-plan 7 12 s"
    assert len(progress_line("p", "x" * 300, 1, 2, "", 1, 80)) <= 80


def test_nothing_is_written_when_stderr_is_not_a_terminal() -> None:
    stream = io.StringIO()
    with TerminalProgress("placer plan", stream=stream, delay_s=0) as progress:
        progress.phase("solve")
        time.sleep(0.4)
    assert stream.getvalue() == ""


def test_nothing_is_written_before_the_delay() -> None:
    stream = _Tty()
    with TerminalProgress("placer plan", stream=stream, delay_s=60) as progress:
        progress.phase("solve")
        time.sleep(0.4)
    assert stream.getvalue() == ""


def test_a_long_run_on_a_terminal_draws_then_erases_the_line() -> None:
    stream = _Tty()
    with TerminalProgress("placer explain", stream=stream, delay_s=0) as progress:
        progress.phase("remedies")
        progress.step(3, 24, "re-plan 4")
        _wait_for_output(stream)
    out = stream.getvalue()
    assert "placer explain: remedies [##" in out and "3/24 re-plan 4" in out
    assert out.endswith("\r\x1b[2K")


def test_explain_reports_its_phases_and_replans_through_the_hook() -> None:
    snap = cluster(pool("p0", 2), pool("p1", 2, ready=False))
    recorder = _Recorder()
    e = explain_jobset(
        snap,
        [jobset("t", rjob(replicas=2))],
        "team-a/t",
        SolveOptions(workers=1, time_limit_s=5),
        settings=ExplainSettings(replan_budget=5),
        progress=recorder,
    )
    assert e.status == "unschedulable"
    phases = [name for kind, name, *_ in recorder.events if kind == "phase"]
    assert phases == ["plan", "count", "conflict", "remedies"]
    steps = [(int(d), int(t)) for kind, d, *rest in recorder.events if kind == "step" for t in rest]
    assert steps and steps[0] == (0, 5)
    assert [d for d, _ in steps] == list(range(len(steps)))
