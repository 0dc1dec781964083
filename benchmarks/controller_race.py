"""Many seeded concurrency trials of the controller: is a block ever released to two JobSets?

Runs `tests/controller/race.py`'s trials (two or three controllers at once, over HTTP against the
API-server stand-in: `--once` runs, long-running controllers, leader-elected replicas whose leader
is cut off from its Lease mid-cycle; different namespaces and solvers; JobSets arriving and
finishing meanwhile) for seeds `--first` .. `--first + --trials - 1`, and prints one line per
trial and a summary. Issue 10's target: 0 double placements in at least 200 trials. Run from the
repository root (the trials live with the tests, next to the API-server stand-in):

    python -m benchmarks.controller_race --trials 200

`--without-ledger` is the control experiment: the same trials with the ledger taken out of the
cycle (nothing committed, nothing held but the controller's own records), as the controller was
before it; the verdict must then find double placements, or the trials could not fail.
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import time
from collections.abc import Iterator, Sequence
from typing import Any
from unittest import mock

from placer.controller import reconcile
from placer.controller.act.commit import CommitResult
from placer.controller.decide.review.ledgerplan import LedgerView
from placer.controller.decide.round import roundreview
from tests.controller.race import draw_trial, run_trial

__all__ = ["main"]


@contextlib.contextmanager
def _without_ledger() -> Iterator[None]:
    """Cycles that commit nothing and hold only their own records (the control experiment)."""

    def commit(adapter: Any, ledger: Any, change: Any, **kw: Any) -> CommitResult:
        return CommitResult(committed=True, ledger=ledger)

    def view_ledger(ledger: Any, state: Any, managed: Any) -> LedgerView:
        return LedgerView()

    # Each where the cycle looks it up: reconcile calls `commit`, roundreview.judge `view_ledger`.
    with (
        mock.patch.object(reconcile, "commit", commit),
        mock.patch.object(roundreview, "view_ledger", view_ledger),
    ):
        yield


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else "")
    parser.add_argument("--trials", type=int, default=200)
    parser.add_argument("--first", type=int, default=0, help="first seed")
    parser.add_argument(
        "--without-ledger", action="store_true", help="control experiment (see the docstring)"
    )
    args = parser.parse_args(argv)
    with _without_ledger() if args.without_ledger else contextlib.nullcontext():
        return _run(args)


def _run(args: argparse.Namespace) -> int:
    logging.basicConfig(level=logging.CRITICAL)
    if args.without_ledger:
        print("control experiment: the ledger is taken out of the cycle")
    start = time.monotonic()
    doubles = unplaced = elected = cut = deposed = conflicts = left = 0
    for seed in range(args.first, args.first + args.trials):
        trial = draw_trial(seed)
        result = run_trial(trial)
        kinds = "+".join(r.kind for r in trial.roles)
        solvers = "+".join(r.solver for r in trial.roles)
        print(
            f"seed {seed}: {kinds} ({solvers}){' cut' if trial.cut_leader_at_s else ''}: "
            f"{len(result.double_placements)} double placements, {result.placed} placed, "
            f"{len(result.unplaced)} fitting left unplaced, {result.conflicts} lost commits, "
            f"{result.deposed} deposed, {result.wall_s:.1f}s",
            flush=True,
        )
        for problem in result.double_placements + result.unplaced:
            print(f"  {problem}", flush=True)
        doubles += bool(result.double_placements)
        unplaced += bool(result.unplaced)
        elected += any(r.kind == "elected" for r in trial.roles)
        cut += trial.cut_leader_at_s is not None
        deposed += result.deposed
        conflicts += result.conflicts
        left += result.left_by_trial > 0
    print(
        f"{doubles} trials with a double placement and {unplaced} with a fitting JobSet left "
        f"unplaced, in {args.trials} trials ({elected} with leader election, {cut} with the "
        f"leader cut off mid-cycle, {deposed} deposed leaders refused; {conflicts} commits lost "
        f"to a concurrent writer and re-planned; {left} trials where a greedy solver's choice "
        f"left a fitting JobSet to the final pass); {time.monotonic() - start:.0f} s"
    )
    return 1 if doubles or unplaced else 0


if __name__ == "__main__":
    raise SystemExit(main())
