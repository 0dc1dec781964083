"""The human view of a plan: one row per JobSet, the reasons for what did not fit, the solver line.

`placer plan` prints this by default. It favors a glance over completeness (domains are abbreviated
as the first few values plus a count); the JSON document is the full record.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from placer.model.plan import JobPlacement, JobSetOutcome, Plan, SolverReport
from placer.model.workload import JobSetRequest

__all__ = ["compact_list", "gap_percent", "render_table", "solver_line"]

HEADERS = ("JOBSET", "STATUS", "PRIORITY", "JOBS", "DOMAINS", "ACCELERATORS")
DOMAINS_SHOWN = 3


def compact_list(values: Sequence[str], shown: int = DOMAINS_SHOWN) -> str:
    """`a,b,c+2` for five values: enough to recognize the placement without flooding the row."""
    if not values:
        return "-"
    head = ",".join(values[:shown])
    rest = len(values) - shown
    return f"{head}+{rest}" if rest > 0 else head


def _is_placed(job: JobPlacement) -> bool:
    return job.domain is not None or bool(job.pods)


def _domain_values(jobs: Iterable[JobPlacement]) -> list[str]:
    """Distinct domains in job order, shown by their value (identity is the full path)."""
    seen: set[tuple[str, tuple[tuple[str, str], ...], str]] = set()
    values: list[str] = []
    for job in jobs:
        d = job.domain
        if d is None:
            continue
        ident = (d.key, tuple(d.path), d.value)
        if ident not in seen:
            seen.add(ident)
            values.append(d.value)
    return values


def _row(outcome: JobSetOutcome, request: JobSetRequest | None) -> tuple[str, ...]:
    placed = sum(1 for j in outcome.jobs if _is_placed(j))
    total = (
        sum(r.replicas for r in request.replicated_jobs)
        if request is not None
        else len(outcome.jobs)
    )
    accelerators = (
        f"{outcome.accelerators}/{request.accelerator_units}"
        if request is not None
        else str(outcome.accelerators)
    )
    return (
        outcome.key,
        outcome.status,
        str(outcome.priority),
        f"{placed}/{total}",
        compact_list(_domain_values(outcome.jobs)),
        accelerators,
    )


def _format_rows(rows: Sequence[Sequence[str]]) -> list[str]:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return [
        "  ".join(cell.ljust(w) for cell, w in zip(r, widths, strict=True)).rstrip() for r in rows
    ]


def gap_percent(report: SolverReport) -> float | None:
    """Relative gap between objective and proven bound, in percent; None when no bound is known.

    Derived from `objective` and `bound` (not `gap`) so every solver is shown on the same footing:
    greedy solvers prove no bound and report one below their objective (or none at all).
    """
    if report.bound is None or report.bound <= 0 or report.bound < report.objective:
        return 0.0 if report.status == "OPTIMAL" else None
    return 100.0 * (report.bound - report.objective) / report.bound


def _num(x: float) -> str:
    return f"{x:g}" if float(x).is_integer() else f"{x:.2f}"


def solver_line(report: SolverReport) -> str:
    """`solver cpsat: OPTIMAL, objective 16, bound 16, gap 0.00%, 1.23 s (load 0.10 s, ...)`."""
    gap = gap_percent(report)
    bound = _num(report.bound) if gap is not None and report.bound is not None else "-"
    gap_text = f"{gap:.2f}%" if gap is not None else "-"
    line = (
        f"solver {report.name}: {report.status}, objective {_num(report.objective)}, "
        f"bound {bound}, gap {gap_text}, {report.wall_seconds:.2f} s"
    )
    if report.phases:
        split = ", ".join(f"{name} {secs:.2f} s" for name, secs in report.phases.items())
        line += f" ({split})"
    return line


def render_table(plan: Plan, jobsets: Sequence[JobSetRequest] = ()) -> str:
    """The whole text block; `jobsets` (optional) adds totals the plan alone does not carry."""
    requests = {js.key: js for js in jobsets}
    lines: list[str] = []
    if plan.jobsets:
        rows = [HEADERS, *(_row(o, requests.get(o.key)) for o in plan.jobsets)]
        lines.extend(_format_rows(rows))
    else:
        lines.append("no JobSets")
    reasons = [o for o in plan.jobsets if o.reason]
    if reasons:
        lines.append("")
        for o in reasons:
            lines.append(f"{o.key} {o.status}: {o.reason}")
    lines.append("")
    lines.append(solver_line(plan.solver))
    lines.extend(f"note: {n}" for n in plan.solver.notes)
    return "\n".join(lines) + "\n"
