"""`--schedule cpsat` with overlapping exclusive keys (pools inside blocks, both exclusive keys of
the queue): the CP-SAT schedule decides, never holding two domains that share a node at once."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from ortools.sat.python import cp_model

from placer.model.cluster import ClusterSnapshot, RunningJobSet
from placer.model.options import ScheduleMode, SolveOptions, TimePolicy
from placer.model.plan import Plan
from placer.model.workload import JobSetRequest
from placer.solver.check.checker import check
from placer.solver.time.calendar import Unit, UnitId, UnitLayout
from placer.solver.time.overlap import overlap
from placer.solver.time.release import ReleaseTimeline
from placer.solver.time.reservations import Candidate, Need, Reservation
from placer.solver.time.schedule import solve as schedule_module
from placer.solver.time.schedule.model import build_schedule
from placer.solver.time.schedule.problem import build_problem, unit_release_s
from placer.solver.time.schedule.solve import (
    ScheduleOutcome,
    ScheduleRequest,
    _whole_seconds,
    hint,
    schedule,
)
from placer.solver.time.schedule.starving import starving
from placer.solver.time.standing import tiers
from placer.solver.time.units import Units
from tests.solver.time.test_schedule import BUSY, NOW, H, _plan, _starts
from tests.solver.time.test_timeaware import _timed
from tests.strategies import BLOCK, NODEPOOL, cluster, jobset, pool, rjob


def _blocks(blocks: dict[str, list[str]], busy_h: dict[str, float]) -> ClusterSnapshot:
    """Blocks of pools of 2 hosts; pool `p` held by a running JobSet for `busy_h[p]` hours."""
    snap = cluster(
        *(
            pool(p, 2, block=b, jobsets=[f"ns/run-{p}"], free=BUSY)
            if p in busy_h
            else pool(p, 2, block=b)
            for b, pools in blocks.items()
            for p in pools
        )
    )
    running = {
        f"ns/run-{p}": RunningJobSet(started_at=NOW, expected_duration_s=h * H)
        for p, h in busy_h.items()
    }
    return snap.model_copy(update={"running": running})


def _per_block(name: str, hours: float, minutes_ago: int) -> JobSetRequest:
    """Queue order is by creation (`minutes_ago`); under 15 minutes no aging weighs in."""
    return _timed(jobset(name, rjob(replicas=1, exclusive=BLOCK)), hours, minutes_ago)


def _per_pool(name: str, hours: float, minutes_ago: int, replicas: int = 1) -> JobSetRequest:
    return _timed(jobset(name, rjob(replicas=replicas, exclusive=NODEPOOL)), hours, minutes_ago)


def _note(plan: Plan) -> str:
    return next(n for n in plan.solver.notes if n.startswith("schedule: "))


def test_a_short_jobset_on_the_whole_block_goes_before_two_long_ones_on_its_pools() -> None:
    """Block B of pools p1 and p2, all free. In queue order the greedy pass starts both 3 h
    pool JobSets now and the 1 h block one waits 3 h (72 weighted hours at 24 an hour); the
    block one first makes each pool one wait 1 h (8 an hour each: 16)."""
    snap = _blocks({"B": ["p1", "p2"]}, {})
    queue = [_per_pool("pool-1", 3, 14), _per_pool("pool-2", 3, 13), _per_block("block", 1, 12)]
    assert _starts(_plan(snap, queue, "greedy")) == {"pool-1": 0, "pool-2": 0, "block": 3 * H}
    plan = _plan(snap, queue, "cpsat")
    assert _starts(plan) == {"pool-1": H, "pool-2": H, "block": 0}
    assert [j.domain.value for j in plan.outcome("team-a/block").jobs if j.domain] == ["B"]
    pools = [plan.outcome(f"team-a/pool-{i}").reserved_domains for i in (1, 2)]
    assert sorted(d.value for ds in pools for d in ds) == ["p1", "p2"]
    assert _note(plan).startswith("schedule: OPTIMAL") and "overlap rules" in _note(plan)


def test_a_long_jobset_on_the_whole_block_waits_for_short_ones_on_its_pools() -> None:
    """The 10 h block JobSet comes first in the queue: the greedy pass starts it now and both
    1 h pool JobSets wait 10 h (480 weighted hours); they go first and it waits 1 h (2)."""
    snap = _blocks({"B": ["p1", "p2"]}, {})
    queue = [_per_block("block", 10, 14), _per_pool("pool-1", 1, 13), _per_pool("pool-2", 1, 12)]
    assert _starts(_plan(snap, queue, "greedy")) == {"block": 0, "pool-1": 10 * H, "pool-2": 10 * H}
    assert _starts(_plan(snap, queue, "cpsat")) == {"block": H, "pool-1": 0, "pool-2": 0}


def test_a_block_waits_for_its_busiest_pool_and_a_pool_run_is_held_back_for_it() -> None:
    """p1 is busy for 2 h, p2 free. The greedy pass starts the 4 h pool JobSet on p2 now, and
    the 1 h block one waits for it, 4 h (96 weighted hours). Holding the pool one back, the
    block one starts as p1 frees, at 2 h, and the pool one at 3 h: 48 + 18."""
    snap = _blocks({"B": ["p1", "p2"]}, {"p1": 2})
    queue = [_per_pool("pool", 4, 14), _per_block("block", 1, 12)]
    assert _starts(_plan(snap, queue, "greedy")) == {"pool": 0, "block": 4 * H}
    assert _starts(_plan(snap, queue, "cpsat")) == {"pool": 3 * H, "block": 2 * H}


def test_pools_are_counted_per_block() -> None:
    """Two blocks: A's pools free, B's busy for 5 h. In queue order the greedy pass starts the
    8 h two-pool JobSet on A's pools now, and the 1 h block one waits 5 h for B (120 weighted
    hours). The block one takes A now and the pool one A's pools at 1 h, B's being busy then
    (3 weighted hours): the model must know which block's pools are free when."""
    snap = _blocks({"A": ["a1", "a2"], "B": ["b1", "b2"]}, {"b1": 5, "b2": 5})
    queue = [_per_pool("pool", 8, 14, replicas=2), _per_block("block", 1, 12)]
    assert _starts(_plan(snap, queue, "greedy")) == {"pool": 0, "block": 5 * H}
    plan = _plan(snap, queue, "cpsat")
    assert _starts(plan) == {"pool": H, "block": 0}
    assert [j.domain.value for j in plan.outcome("team-a/block").jobs if j.domain] == ["A"]
    assert sorted(d.value for d in plan.outcome("team-a/pool").reserved_domains) == ["a1", "a2"]


@pytest.mark.parametrize("schedule_with", ["greedy", "cpsat"])
def test_a_pool_run_now_never_outlasts_its_blocks_reservation(
    schedule_with: ScheduleMode,
) -> None:
    """The block JobSet is reserved B from 2 h (when p1 frees); the 4 h pool JobSet could start
    now on p2, inside B. The planner used to see B's reservation on B only and start it there
    (with either schedule: the checker did not see it either); now it waits, reserved at 3 h."""
    snap = _blocks({"B": ["p1", "p2"]}, {"p1": 2})
    queue = [_per_block("block", 1, 14), _per_pool("pool", 4, 12)]
    plan = _plan(snap, queue, schedule_with)
    assert _starts(plan) == {"block": 2 * H, "pool": 3 * H}
    assert plan.outcome("team-a/pool").status != "placed"


def test_the_checker_sees_reservations_and_runs_on_domains_sharing_nodes() -> None:
    """From a valid plan (block reserved B at 2 h, pool reserved at 3 h): the pool run moved to
    2.5 h overlaps the block's on shared nodes; the pool run started now on p2 for 4 h runs into
    B's reservation (and is not marked backfill)."""
    snap = _blocks({"B": ["p1", "p2"]}, {"p1": 2})
    queue = [_per_block("block", 1, 14), _per_pool("pool", 4, 12)]
    plan = _plan(snap, queue, "cpsat")
    options = SolveOptions(time=TimePolicy(now=NOW, reservations="all", schedule="cpsat"))
    pool_outcome = plan.outcome("team-a/pool")
    early = pool_outcome.model_copy(update={"expected_start_seconds": 2.5 * H})
    moved = plan.model_copy(
        update={"jobsets": [early if o.key == early.key else o for o in plan.jobsets]}
    )
    problems = check(moved, snap, queue, options)
    assert any("share nodes: reservations of team-a/block" in p for p in problems), problems
    greedy_first = _plan(snap, [_per_pool("pool", 4, 14)], "greedy")  # placed now on p2
    placed = greedy_first.outcome("team-a/pool")
    assert placed.status == "placed" and [j.domain.value for j in placed.jobs if j.domain] == ["p2"]
    ran = plan.model_copy(
        update={"jobsets": [placed if o.key == placed.key else o for o in plan.jobsets]}
    )
    problems = check(ran, snap, queue, options)
    assert any(
        "runs 14400 s on p2, sharing nodes with" in p and "reserved for team-a/block" in p
        for p in problems
    ), problems
    assert any("is not marked backfill" in p for p in problems), problems


# the schedule on its own (units and candidates as the time-aware pass hands them)

POOLS = {"p1": ("n1", "n2"), "p2": ("n3", "n4")}


def _layout(extra: dict[UnitId, tuple[str, ...]] | None = None) -> UnitLayout:
    """Block b over pools p1 and p2, and any `extra` units."""
    units = [Unit(("pool", p), frozenset(ns)) for p, ns in POOLS.items()]
    units.append(Unit(("block", "b"), frozenset(n for ns in POOLS.values() for n in ns)))
    units += [Unit(uid, frozenset(ns)) for uid, ns in (extra or {}).items()]
    return UnitLayout(units)


def _request(
    layout: UnitLayout,
    candidates: list[Candidate],
    holds: tuple[tuple[UnitId, float, float], ...] = (),
) -> ScheduleRequest:
    tiers = {c.jobset: (0, 0.0) for c in candidates}
    return ScheduleRequest(layout, tuple(candidates), {}, holds, {}, tiers, None)


def _on(name: str, hours: float, key: str, *values: str) -> Candidate:
    return Candidate(name, hours * H, (Need("w", 1, frozenset((key, v) for v in values)),))


def _by_key(outcome: ScheduleOutcome) -> dict[str, Reservation]:
    assert outcome.reservations is not None, outcome.note
    return {r.jobset: r for r in outcome.reservations}


def test_overlapping_keys_are_no_longer_left_to_the_greedy_pass() -> None:
    outcome = schedule(
        _request(_layout(), [_on("pool", 1, "pool", "p1", "p2"), _on("block", 1, "block", "b")]),
        SolveOptions(workers=1, seed=0),
    )
    assert outcome.status == "OPTIMAL", outcome.note
    assert "overlap rules" in outcome.note


def test_a_hold_on_a_pool_keeps_its_block_busy_and_not_the_other_pool() -> None:
    """Another JobSet holds p1 from 1 h to 2 h: the 2 h block JobSet cannot start now (it
    would overlap the hold), it starts when the hold ends; the pool JobSet takes p2 now."""
    layout = _layout()
    candidates = [_on("block", 2, "block", "b"), _on("pool", 3, "pool", "p1", "p2")]
    outcome = schedule(
        _request(layout, candidates, holds=((("pool", "p1"), H, 2 * H),)),
        SolveOptions(workers=1, seed=0),
    )
    found = _by_key(outcome)
    assert (found["pool"].start_s, found["pool"].units) == (0.0, {"w": (("pool", "p2"),)})
    assert found["block"].start_s == 3 * H  # after the pool run on p2, which it needs too


def test_one_jobset_never_holds_a_block_and_a_pool_inside_it() -> None:
    """A JobSet needing a pool and a block (two replicated jobs) over one block of two pools
    and one lone pool: it takes the lone pool, not a pool inside the block it holds."""
    layout = _layout({("pool", "p3"): ("n5",)})
    both = Candidate(
        "both",
        H,
        (
            Need("pool", 1, frozenset({("pool", "p1"), ("pool", "p2"), ("pool", "p3")})),
            Need("block", 1, frozenset({("block", "b")})),
        ),
    )
    found = _by_key(schedule(_request(layout, [both]), SolveOptions(workers=1, seed=0)))
    assert found["both"].start_s == 0
    assert found["both"].units == {"pool": (("pool", "p3"),), "block": (("block", "b"),)}


def test_crossing_keys_hold_one_unit_per_shared_node_at_a_time() -> None:
    """Units that cross (x over n1 n2, y over n2 n3: neither inside the other) share n2: JobSets
    on x and on y never run at once, while one on z (n4) starts now."""
    layout = UnitLayout(
        [
            Unit(("x", "x"), frozenset({"n1", "n2"})),
            Unit(("y", "y"), frozenset({"n2", "n3"})),
            Unit(("z", "z"), frozenset({"n4"})),
        ]
    )
    assert overlap(layout, range(3)).alone == {0, 1}
    candidates = [_on("x", 1, "x", "x"), _on("y", 2, "y", "y"), _on("z", 1, "z", "z")]
    outcome = schedule(_request(layout, candidates), SolveOptions(workers=1, seed=0))
    found = _by_key(outcome)
    assert outcome.status == "OPTIMAL"
    assert (found["x"].start_s, found["y"].start_s, found["z"].start_s) == (0, H, 0)


def test_nests_count_the_pools_inside_them_and_pools_stay_counted_per_block() -> None:
    """Block b over p1 and p2, and a lone pool p3: b is a nest of its own (capacity its two
    cells, each pool weighing one); p1 and p2 share a class signature, p3 sits in no nest."""
    layout = _layout({("pool", "p3"): ("n5",)})
    number = layout.number
    found = overlap(layout, range(len(layout.ids)))
    block, p1, p2 = number[("block", "b")], number[("pool", "p1")], number[("pool", "p2")]
    assert found.alone == {block}
    assert found.inside == {p1: (block,), p2: (block,)}
    [nest] = found.nests
    assert (nest.cells, dict(nest.weights)) == (2, {block: 2, p1: 1, p2: 1})
    # nobody may take the block: no nest, pools counted as without it
    assert overlap(layout, [p1, p2]).nests == ()


def test_past_the_terms_limit_the_greedy_pass_decides_and_says_why(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(schedule_module, "OVERLAP_TERMS_LIMIT", 1)
    outcome = schedule(
        _request(_layout(), [_on("pool", 1, "pool", "p1", "p2"), _on("block", 1, "block", "b")]),
        SolveOptions(workers=1, seed=0),
    )
    assert (outcome.reservations, outcome.status) == (None, "FALLBACK")
    assert "overlapping-key terms past 1, greedy" in outcome.note


@st.composite
def _cases(draw: st.DrawFn) -> tuple[ClusterSnapshot, list[JobSetRequest]]:
    """1-2 blocks of 1-3 pools, some busy; JobSets per pool, per block, or both at once."""
    blocks = {
        f"B{b}": [f"b{b}p{p}" for p in range(draw(st.integers(1, 3)))]
        for b in range(draw(st.integers(1, 2)))
    }
    pools = [p for ps in blocks.values() for p in ps]
    busy = draw(
        st.dictionaries(st.sampled_from(pools), st.sampled_from([0.5, 1, 2, 5]), max_size=3)
    )
    queue = []
    for i in range(draw(st.integers(1, 5))):
        kind = draw(st.sampled_from(["pool", "pool", "block", "both"]))
        rjobs = []
        if kind in ("pool", "both"):
            rjobs.append(rjob("p", replicas=draw(st.integers(1, len(pools)))))
        if kind in ("block", "both"):
            rjobs.append(rjob("b", replicas=draw(st.integers(1, len(blocks))), exclusive=BLOCK))
        js = jobset(f"js-{i}", *rjobs, priority=draw(st.sampled_from([0, 0, 10])))
        hours, ago = draw(st.sampled_from([0.25, 1, 3])), draw(st.integers(0, 600))
        queue.append(_timed(js, hours, ago))
    return _blocks(blocks, busy), queue


def _scheduled(
    snap: ClusterSnapshot, queue: list[JobSetRequest]
) -> tuple[ScheduleOutcome, ScheduleRequest, dict[UnitId, frozenset[str]]]:
    """The schedule of the request the time-aware pass would make, and each unit's nodes."""
    policy = TimePolicy(now=NOW, reservations="all", schedule="cpsat")
    options = SolveOptions(workers=1, seed=0, time=policy)
    timeline = ReleaseTimeline.build(snap, NOW, policy.default_duration_s)
    units = Units(snap, queue, options, timeline)
    request = ScheduleRequest(
        units.layout,
        tuple(units.candidate(js, js.expected_duration_s or 0) for js in queue),
        units.free_at,
        (),
        {},
        tiers(queue, policy, NOW),
        None,
    )
    nodes = {unit_id: frozenset(d.nodes) for unit_id, d in units.domains.items()}
    return schedule(request, options), request, nodes


@settings(max_examples=30, deadline=None)
@given(case=_cases())
def test_the_schedule_never_starts_early_nor_holds_units_sharing_a_node_at_once(
    case: tuple[ClusterSnapshot, list[JobSetRequest]],
) -> None:
    """Whatever the mix of JobSets per pool, per block or both: CP-SAT decides (no fallback),
    each reservation starts once all its units' nodes are free, and two units sharing a node
    are never held at once, by two JobSets or by one."""
    outcome, request, nodes = _scheduled(*case)
    assert outcome.reservations is not None and outcome.status in ("OPTIMAL", "FEASIBLE"), (
        outcome.note
    )
    windows: list[tuple[float, float, str, frozenset[str]]] = []
    for r in outcome.reservations:
        if r.start_s is None or r.end_s is None:
            continue
        for unit in (u for group in r.units.values() for u in group):
            free = max((request.free_at.get(n, 0.0) for n in nodes[unit]), default=0.0)
            assert r.start_s >= free, f"{r.jobset} starts on {unit} before it frees"
            windows.append((r.start_s, r.end_s, f"{r.jobset}:{unit[1]}", nodes[unit]))
    for (s1, e1, k1, n1), (s2, e2, k2, n2) in itertools.combinations(windows, 2):
        if n1 & n2:
            assert e1 <= s2 or e2 <= s1 or s1 == e1 or s2 == e2, f"{k1} and {k2} share nodes"


@settings(max_examples=50, deadline=None)
@given(case=_cases())
def test_the_greedy_hint_is_a_schedule_of_the_overlap_model(
    case: tuple[ClusterSnapshot, list[JobSetRequest]],
) -> None:
    """Fixed to its hint, the model has a solution: the greedy pass's schedule meets the overlap
    rules, so the search always starts from a complete schedule."""
    _, request, _ = _scheduled(*case)
    old = starving(request)
    hinted = hint(request, old)
    free_at, holds = _whole_seconds(request)
    problem = build_problem(
        request, hinted, unit_release_s(request.layout, free_at), holds, starving=old
    )
    model, _ = build_schedule(problem)
    fixed = cp_model.CpSolver()
    fixed.parameters.num_workers = 1
    fixed.parameters.fix_variables_to_their_hinted_value = True
    assert fixed.status_name(fixed.solve(model)) in ("OPTIMAL", "FEASIBLE")


@settings(max_examples=15, deadline=None)
@given(case=_cases())
def test_a_full_plan_with_overlapping_keys_passes_the_checker(
    case: tuple[ClusterSnapshot, list[JobSetRequest]],
) -> None:
    """Through the time-aware pass and the planner, `--schedule cpsat`: the independent checker
    finds nothing, and the schedule's note is CP-SAT's, not the greedy fallback's."""
    snap, queue = case
    note = _note(_plan(snap, queue, "cpsat"))  # `_plan` runs the checker
    assert not note.endswith(", greedy"), note
