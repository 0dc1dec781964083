"""The human view of a plan: one row per JobSet, the reasons for what did not fit, the solver line.

`placer plan` prints this by default. It favors a glance over completeness (domains are abbreviated
as the first few values plus a count); the JSON document is the full record. At fleet scale the
CLI passes a width and a row limit: beyond the limit the table becomes a summary (counts by status,
the highest-priority JobSets left out, with their reasons), and no line is longer than the width
(rows are cut, the solver line wrapped). `-o wide` passes neither.
"""

from __future__ import annotations

import textwrap
from collections import Counter
from collections.abc import Iterable, Sequence

from placer.model.durations import format_go_duration
from placer.model.plan import JobPlacement, JobSetOutcome, Plan, SolverReport
from placer.model.workload import JobSetRequest

__all__ = [
    "compact_list",
    "eta",
    "fit_lines",
    "gap_percent",
    "preemption_lines",
    "render_table",
    "solver_line",
]

HEADERS = ("JOBSET", "STATUS", "PRIORITY", "JOBS", "DOMAINS", "ACCELERATORS")
DOMAINS_SHOWN = 3
DOMAINS_COLUMN = HEADERS.index("DOMAINS")
STATUS_ORDER = ("placed", "partial", "unschedulable")


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


def _format_rows(rows: Sequence[Sequence[str]], width: int | None = None) -> list[str]:
    """Columns two spaces apart; beyond `width`, the DOMAINS column gives way first, then rows
    are cut (the full values are in `-o wide` and the JSON document)."""
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    if width is not None:
        over = sum(widths) + 2 * (len(widths) - 1) - width
        shrinkable = widths[DOMAINS_COLUMN] - len(HEADERS[DOMAINS_COLUMN])
        if over > 0 and shrinkable > 0:
            widths[DOMAINS_COLUMN] -= min(over, shrinkable)
    lines = []
    for r in rows:
        cells = [_cut(cell, w) for cell, w in zip(r, widths, strict=True)]
        line = "  ".join(cell.ljust(w) for cell, w in zip(cells, widths, strict=True)).rstrip()
        lines.append(_cut(line, width))
    return lines


def _cut(text: str, width: int | None) -> str:
    """`text`, or its first `width - 3` characters and `...` when it is longer than `width`."""
    if width is None or len(text) <= width:
        return text
    return text[: max(width - 3, 1)] + "..."


def _wrap(text: str, width: int | None) -> list[str]:
    """Long prose lines (the solver line, notes) wrapped, not cut: every word stays."""
    if width is None or len(text) <= width:
        return [text]
    indent = text[: len(text) - len(text.lstrip(" "))]
    return textwrap.wrap(
        text,
        width=width,
        initial_indent="",
        subsequent_indent=indent + "  ",
        break_on_hyphens=False,
    )


def fit_lines(lines: Iterable[str], width: int | None) -> list[str]:
    """Every line within `width` (None: as they are): table rows (cells two spaces apart) are cut
    with `...`, prose lines are wrapped with a hanging indent, so no word of a sentence is lost."""
    out: list[str] = []
    for line in lines:
        if width is None or len(line) <= width:
            out.append(line)
        elif "  " in line.strip():
            out.append(_cut(line, width))
        else:
            out.extend(_wrap(line, width))
    return out


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


def _timed(plan: Plan) -> bool:
    """Time-aware planning ran: placed JobSets then carry an expected start of 0."""
    return any(o.expected_start_seconds is not None for o in plan.jobsets)


def eta(outcome: JobSetOutcome) -> str:
    """`now`, `now (backfill)`, `in 2h30m (reserved)`, `in 5h`, or `never` (it fits no empty
    cluster); a JobSet waiting longer than `--max-wait` says so (`in 9h (reserved, past
    --max-wait)`): the one whose domains the extender guards already."""
    start = outcome.expected_start_seconds
    if start is None:
        return "never"
    if start <= 0:
        return "now (backfill)" if outcome.backfill else "now"
    text = f"in {format_go_duration(start)}"
    marks = ["reserved"] if outcome.reserved_domains else []
    if outcome.past_max_wait:
        marks.append("past --max-wait")
    return f"{text} ({', '.join(marks)})" if marks else text


def render_table(
    plan: Plan,
    jobsets: Sequence[JobSetRequest] = (),
    *,
    width: int | None = None,
    max_rows: int | None = None,
) -> str:
    """The whole text block; `jobsets` (optional) adds totals the plan alone does not carry.

    `width` caps every line (None: no cap, `-o wide`); with more JobSets than `max_rows` the table
    becomes a summary: counts by status, the highest-priority JobSets left out, and a hint.
    """
    requests = {js.key: js for js in jobsets}
    lines: list[str] = []
    if max_rows is not None and len(plan.jobsets) > max_rows:
        shown = _summary(plan, requests, lines, max_rows)
        summarize = True
    else:
        shown, summarize = list(plan.jobsets), False
    if shown:
        rows = [HEADERS, *(_row(o, requests.get(o.key)) for o in shown)]
        if _timed(plan):
            rows = [
                (*rows[0], "ETA"),
                *((*r, eta(o)) for r, o in zip(rows[1:], shown, strict=True)),
            ]
        lines.extend(_format_rows(rows, width))
    elif not plan.jobsets:
        lines.append("no JobSets")
    reasons = [o for o in shown if o.reason]
    if reasons:
        lines.append("")
        lines.extend(_cut(f"{o.key} {o.status}: {o.reason}", width) for o in reasons)
    if plan.preempted:
        lines.append("")
        lines.extend(_cut(line, width) for line in preemption_lines(plan))
    if summarize:
        lines.append("")
        lines.append(f"all {len(plan.jobsets)} JobSets: -o wide (table) or -o json")
    lines.append("")
    lines.extend(_wrap(solver_line(plan.solver), width))
    for note in plan.solver.notes:
        lines.extend(_wrap(f"note: {note}", width))
    return "\n".join(lines) + "\n"


def preemption_lines(plan: Plan) -> list[str]:
    """One sentence per evicted JobSet: for whom, and what it costs in chip-hours."""
    return [
        f"{p.key} preempted for {', '.join(p.makes_room_for)} ({p.cost_text})"
        for p in plan.preempted
    ]


def _summary(
    plan: Plan, requests: dict[str, JobSetRequest], lines: list[str], max_rows: int
) -> list[JobSetOutcome]:
    """Append the counts by status; return the unplaced JobSets to list, highest priority first
    (queue order within a priority), at most half of `max_rows` (their reasons follow them)."""
    by_status: Counter[str] = Counter(o.status for o in plan.jobsets)
    counts = ", ".join(f"{by_status[s]} {s}" for s in STATUS_ORDER if by_status[s])
    held = sum(o.accelerators for o in plan.jobsets)
    asked = sum(r.accelerator_units for r in requests.values())
    units = f"; accelerators {held}/{asked}" if asked else f"; accelerators {held}"
    lines.append(f"{len(plan.jobsets)} JobSets: {counts}{units}")
    unplaced = [o for o in plan.jobsets if o.status != "placed"]
    order = {o.key: i for i, o in enumerate(plan.jobsets)}
    unplaced.sort(key=lambda o: (-o.priority, order[o.key]))
    top = unplaced[: max(max_rows // 2, 1)]
    if top:
        rest = len(unplaced) - len(top)
        more = f" ({rest} more not shown)" if rest else ""
        lines.append(f"not placed, highest priority first{more}:")
    return top
