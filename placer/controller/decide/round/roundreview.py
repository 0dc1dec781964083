"""What one round makes of its observation, decided without touching the cluster.

The review phase (`reconcile.Controller._review`) judges the observation before anything is
planned; only confirming the ledger's suspects gone (one read of the API server per cycle) and
choosing which targets are due (the process's memory of windows and retries) stay in the cycle.
The judging is pure, so it lives here: with --kueue-admission-check the survey as Kueue has it
first (`kueue.cycle.kueue_survey`: a suspended JobSet whose Workload holds quota is planned, an
evicted one's entries released); then the ledger sorted against the observed JobSets
(`ledgerplan.view_ledger`), suspended JobSets whose pods are gone released
(`releases.release_suspended`) and so are placements whose record can no longer be written
(`releases.release_unwritable`), the evictions in progress and those finished released
(`Observed.evictions`), every record judged and the targets listed (`review.review`, the
pods an eviction still holds counted as the beneficiary's own), and, with `--preemption`, who
may be evicted (`preempting.eligibility`).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from placer.controller.decide.kueue.check import KueueAdmission, release_evicted
from placer.controller.decide.kueue.cycle import kueue_survey
from placer.controller.decide.observe.kueue import KueueView
from placer.controller.decide.observed import Observed
from placer.controller.decide.preempting import Eligibility, Evictions, eligibility
from placer.controller.decide.review.ledgerplan import LedgerView, view_ledger
from placer.controller.decide.review.releases import release_suspended, release_unwritable
from placer.controller.decide.review.review import Review, review
from placer.model.options import SolveOptions

__all__ = ["Judged", "ReviewSettings", "judge"]


@dataclass(frozen=True)
class ReviewSettings:
    """The controller's flags the review reads, and the round's instant."""

    namespaces: tuple[str, ...] = ()
    kueue: bool = False
    """--kueue-admission-check: Kueue's Workloads say which JobSets are planned."""
    max_preemptions_per_day: int = 0
    now: str = ""
    """The round's instant in RFC 3339 (stamped on Kueue's events)."""
    wall_s: float = 0.0
    """The same instant in epoch seconds (how many preemptions a JobSet had in the last day)."""


@dataclass(frozen=True)
class Judged:
    """The review's verdict on one observation."""

    observed: Observed
    """The observation, with the survey as Kueue has it under --kueue-admission-check."""
    ledger: LedgerView
    """The ledger against the observed JobSets, finished evictions released (its suspects not
    yet confirmed gone: the cycle asks the API server)."""
    review: Review
    evictions: Evictions
    kueue: KueueView | None = None
    eligibility: Eligibility | None = None
    """Who may be evicted this round (None: --preemption none)."""


def judge(observed: Observed, options: SolveOptions, settings: ReviewSettings) -> Judged:
    """The records judged, the ledger sorted and the targets listed (the module docstring)."""
    kueue: KueueView | None = None
    admission: KueueAdmission | None = None
    if settings.kueue:
        observed, kueue, admission = kueue_survey(
            observed, namespaces=settings.namespaces, now=settings.now
        )
    admit = admission.admit if admission is not None else frozenset()
    view = view_ledger(observed.ledger, observed.state, observed.managed)
    if admission is not None:
        view = release_evicted(view, admission.release)
    keep = frozenset(kueue.workloads) if kueue is not None else frozenset()
    managed, view = release_suspended(observed.managed, view, keep=keep)
    managed, view = release_unwritable(managed, view)
    observed = replace(observed, managed=managed)
    evictions = observed.evictions(view.evictions)
    view = view.releasing(evictions.done)
    rev = review(observed.managed, observed.index, options, admit=admit, lent=evictions.lent)
    eligible = None
    if options.preemption.active:
        eligible = eligibility(
            observed.managed,
            rev,
            now_s=settings.wall_s,
            max_per_day=settings.max_preemptions_per_day,
        )
    return Judged(observed, view, rev, evictions, kueue, eligible)
