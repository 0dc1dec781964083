"""What telling waiting JobSets without an exclusive key when they start costs on a large fleet.

`python -m benchmarks.shared_starts_bench --nodes 10000 --pending 500 --shared 100` builds the
scaling scenario (`build_tpu_pool_fleet`: TPU pools, 30% of them held by running JobSets, a few
hosts cordoned or NotReady), takes `--shared` of its queue's JobSets out of exclusive placement
(their pods keep their shape, no `exclusive-topology`), gives the next `--mixed` a coordinator
without one (their workers keep it), and plans it once with time-aware
best-fit (`--solver`, `--schedule`), every reservation held (`--reservations all`), as the
controller does each cycle. It
prints the wall time, the pass's phases (`estimate` holds the starts of JobSets left out, node
by node for the shared ones since `shared_starts`) and how the shared JobSets left out were told
to start: now, later, or never, and, of the last run, the JobSets placed per priority and the
accelerators placed. Each plan runs with Python's garbage collector paused, as the controller's
cycle does (`--collector running`: on, as until round 52; paused, the full collection after the
plan is printed apart). The same command on an older tree (PYTHONPATH) is the baseline.
Figures go to benchmarks/RESULTS-controller.md by hand, with the machine.
"""

from __future__ import annotations

import argparse
from collections import Counter
from collections.abc import Sequence

from benchmarks.reporting.collector import add_collector_argument, timed_call
from benchmarks.worlds.busy_fleet import NOW, add_fleet_arguments, busy_fleet
from placer.controller.decide.plan.heldnodes import held_from_now, shapes_without_a_key
from placer.model.cluster import ClusterSnapshot
from placer.model.options import SolveOptions, TimePolicy
from placer.model.plan import Plan
from placer.model.workload import JobSetRequest
from placer.solver.registry import get_solver

__all__ = ["main"]


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.shared_starts_bench")
    add_fleet_arguments(parser, pending=500, shared=100, held=0.9)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--solver", choices=["best-fit", "cpsat"], default="best-fit")
    parser.add_argument("--schedule", choices=["greedy", "cpsat"], default="greedy")
    parser.add_argument("--time-limit", type=float, default=10.0, help="CP-SAT's, per solve")
    parser.add_argument(
        "--records",
        action="store_true",
        help="every running JobSet holds a placement record, as under the controller: the nodes "
        "with room for a queued pod without an exclusive key reserved to their holder "
        "(planning.held_from_now), within the timed plan",
    )
    add_collector_argument(parser)
    args = parser.parse_args(argv)
    snapshot, queue = busy_fleet(args)
    held = {n.name: list(n.jobsets) for n in snapshot.nodes if n.jobsets} if args.records else {}
    shared = {js.key for js in queue[: args.shared]}
    mixed = {js.key for js in queue[args.shared : args.shared + args.mixed]}
    policy = TimePolicy(now=NOW, reservations="all", schedule=args.schedule)
    options = SolveOptions(workers=2, time_limit_s=args.time_limit, time=policy)
    solver = get_solver(args.solver, time_policy=policy)
    print(f"{len(snapshot.nodes)} nodes, {len(queue)} pending, {len(shared)} without a key")

    def plan_once() -> Plan:
        planned_on = _with_records(snapshot, queue, held, options) if held else snapshot
        return solver.solve(planned_on, queue, options)

    for run in range(args.repeat):
        timed = timed_call(plan_once, args.collector)
        plan, wall = timed.value, timed.wall_s
        collect = "" if timed.collect_s is None else f", then a collection {timed.collect_s:.2f} s"
        waiting = [o for o in plan.jobsets if o.key in shared and o.status != "placed"]
        now = sum(1 for o in waiting if o.expected_start_seconds == 0)
        never = sum(1 for o in waiting if o.expected_start_seconds is None)
        phases = ", ".join(f"{k} {v:.2f}" for k, v in plan.solver.phases.items())
        print(
            f"run {run + 1}: wall {wall:.2f} s ({phases}){collect}; "
            f"{len(waiting)} shared left out: {now} told now, "
            f"{len(waiting) - now - never} later, {never} never"
            + (f"; {_mixed_told(plan, mixed)}" if mixed else "")
        )
    print(f"placed: {_placed(plan, queue)}")


def _with_records(
    snapshot: ClusterSnapshot,
    queue: Sequence[JobSetRequest],
    held: dict[str, list[str]],
    options: SolveOptions,
) -> ClusterSnapshot:
    """The snapshot as the controller gives it to the planner when every running JobSet holds
    a record (`--records`): the holders named by their keys here, not by hold tokens."""
    return held_from_now(snapshot, held, options, shapes_without_a_key(queue))


def _mixed_told(plan: Plan, mixed: set[str]) -> str:
    """How the JobSets with a coordinator left out were told to start: with domains held, later
    without, or never; and the mean start told (hours) of those told one."""
    waiting = [o for o in plan.jobsets if o.key in mixed and o.status != "placed"]
    held = sum(1 for o in waiting if o.reserved_domains)
    never = sum(1 for o in waiting if o.expected_start_seconds is None)
    starts = [o.expected_start_seconds for o in waiting if o.expected_start_seconds is not None]
    mean = sum(starts) / len(starts) / 3600 if starts else 0.0
    return (
        f"{len(waiting)} mixed left out: {held} holding domains, "
        f"{len(waiting) - held - never} without, {never} never, mean start {mean:.2f} h"
    )


def _placed(plan: Plan, queue: Sequence[JobSetRequest]) -> str:
    """Per priority, the JobSets placed of those queued; and the accelerators placed."""
    priority = {js.key: js.priority for js in queue}
    placed = {o.key for o in plan.jobsets if o.status == "placed"}
    counts = Counter(priority[k] for k in placed)
    queued = Counter(priority.values())
    per = ", ".join(f"{p}: {counts[p]} of {queued[p]}" for p in sorted(queued, reverse=True))
    chips = sum(o.accelerators for o in plan.jobsets if o.status == "placed")
    return f"{per}; {chips} accelerators"


if __name__ == "__main__":
    main()
