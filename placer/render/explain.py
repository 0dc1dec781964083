"""`placer explain` output: the explanation as text (default) or as its JSON document.

The JSON document is `Explanation.model_dump(mode="json")`, the same data the text shows. The text
leads with the verdict, then per replicated job the domains by reason (Kueue-style counts), the
conflicting requirements, the remedies found, and the solver line `placer plan` prints.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol

from placer.model.durations import format_go_duration
from placer.model.plan import JobPlacement, PreemptedJobSet, eviction_text
from placer.render.table import compact_list, fit_lines, solver_line
from placer.solver.reasons.wording import NO_DOMAIN

if TYPE_CHECKING:  # importing the explain package loads CP-SAT: every CLI command would pay it
    from placer.solver.explain.result import Explanation, ReplicatedJobDiagnosis

__all__ = ["format_rows", "group_reasons", "render_explanation", "render_explanation_json"]

GROUP_AT = 4
"""Reasons of one kind are listed one a line up to this many; more become one grouped line
(`324  held by running JobSets: a, b, c +321`). The JSON document keeps every one."""
NAMES_SHOWN = 3
MAX_REMEDIES = 10
MAX_JOBS = 40
MAX_OTHERS = 8
"""Other JobSets listed in a conflict before the rest are counted (a full cluster makes every
JobSet holding a domain the target could use part of the conflict)."""


def format_rows(rows: Sequence[Sequence[str]]) -> list[str]:
    """Left-aligned columns two spaces apart, trailing blanks dropped."""
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return [
        "  ".join(cell.ljust(w) for cell, w in zip(r, widths, strict=True)).rstrip() for r in rows
    ]


def render_explanation_json(e: Explanation) -> str:
    return json.dumps(e.model_dump(mode="json"), indent=2) + "\n"


def _where(jobs: Sequence[JobPlacement]) -> list[str]:
    rows = [("JOB", "DOMAIN", "NODES")]
    for j in jobs[:MAX_JOBS]:
        nodes = sorted({p.node for p in j.pods})
        rows.append((j.name, j.domain.value if j.domain else "-", compact_list(nodes)))
    lines = ["  " + line for line in format_rows(rows)]
    if len(jobs) > MAX_JOBS:
        lines.append(f"  ... and {len(jobs) - MAX_JOBS} more child Jobs (all of them in -o json)")
    return lines


class _Reason(Protocol):
    """What the grouping reads of a reason count (the solver's `ReasonCount`)."""

    @property
    def kind(self) -> str: ...
    @property
    def count(self) -> int: ...
    @property
    def text(self) -> str: ...
    @property
    def jobsets(self) -> list[str]: ...


def group_reasons(reasons: Sequence[_Reason]) -> list[tuple[int, str]]:
    """(count, text) lines: reasons of one kind as they are, or one line when there are more
    than `GROUP_AT` of them, at the place of the kind's first reason."""
    kinds: dict[str, list[_Reason]] = {}
    for r in reasons:
        kinds.setdefault(r.kind, []).append(r)
    lines: list[tuple[int, str]] = []
    for kind, group in kinds.items():
        if len(group) <= GROUP_AT:
            lines.extend((r.count, r.text) for r in group)
        else:
            lines.append((sum(r.count for r in group), _grouped_text(kind, group)))
    return lines


def _grouped_text(kind: str, group: Sequence[_Reason]) -> str:
    """`held by running JobSets: a, b, c +321`: the words the texts share, then what differs."""
    texts = [r.text.split() for r in group]
    shared = 0
    while all(len(words) > shared and words[shared] == texts[0][shared] for words in texts):
        shared += 1
    label = " ".join(texts[0][:shared]) or kind
    names = list(dict.fromkeys(name for r in group for name in r.jobsets))
    if names and len(names) >= len(group):
        if "JobSet" not in label:
            label += " JobSets"
        items = names
    else:
        items = list(dict.fromkeys(" ".join(words[shared:]) or kind for words in texts))
    head = ", ".join(items[:NAMES_SHOWN])
    rest = len(items) - NAMES_SHOWN
    return f"{label}: {head} +{rest}" if rest > 0 else f"{label}: {head}"


def _domains(jobs: Sequence[JobPlacement]) -> str:
    values = [j.domain.value for j in jobs if j.domain is not None]
    nodes = sorted({p.node for j in jobs if j.domain is None for p in j.pods})
    return compact_list(values or nodes, shown=4)


def _diagnosis(d: ReplicatedJobDiagnosis) -> list[str]:
    verdict = "enough" if d.fits else "not enough"
    if d.unit == "domain":
        head = (
            f"{d.name}: needs {d.needed} domain{'s' if d.needed != 1 else ''} of "
            f"{d.exclusive_key}, each for {d.pods_per_job} pod{'s' if d.pods_per_job != 1 else ''}"
            f" of {d.shape}; "
            + (f"{d.available} of {d.total} available ({verdict})" if d.total else NO_DOMAIN)
        )
    else:
        head = (
            f"{d.name}: needs {d.needed} pod{'s' if d.needed != 1 else ''} of {d.shape}; room "
            f"for {d.available} on {d.nodes_with_room or 0} of {d.total} nodes ({verdict})"
        )
    lines = [head]
    counted = group_reasons(d.reasons)
    width = max((len(str(count)) for count, _ in counted), default=1)
    lines.extend(f"  {str(count).rjust(width)}  {text}" for count, text in counted)
    if d.locality:
        lines.append(f"  {d.locality}")
    return lines


def _expected_start(e: Explanation) -> list[str]:
    """When and where it is expected to start, whom it waits for, and whether it is past
    `--max-wait` (time-aware planning); without it, only that it never fits, and why."""
    start = e.expected_start_seconds
    if e.status == "placed":
        return []
    if start is None and "reserve" not in e.solver.phases:
        return [f"never fits, even once every running JobSet ends: {e.never}"] if e.never else []
    if start is None:
        if e.never:
            return [f"expected start: never, even once every running JobSet ends: {e.never}"]
        return ["expected start: never (it fits no domain set even on an empty cluster)"]
    where = ""
    if e.reserved_domains:
        where = " on " + compact_list([d.value for d in e.reserved_domains])
        if e.reserved_nodes:
            where += " and nodes " + compact_list(e.reserved_nodes)
        where += " (reserved)"
    line = f"expected start: in {format_go_duration(start)}{where}"
    if e.waits_for:
        line += "; waits for running " + compact_list(e.waits_for)
    if e.past_max_wait:
        line += "; waiting past --max-wait"
    return [line]


def _evicted_for(e: Explanation) -> list[PreemptedJobSet]:
    """The running JobSets the plan evicts to place this one (`placer explain --preemption`)."""
    if e.status != "placed" or e.plan is None:
        return []
    return [p for p in e.plan.preempted if e.jobset in p.makes_room_for]


def render_explanation(e: Explanation, *, width: int | None = None) -> str:
    """The text; with a `width` (None: no limit, `-o wide`) long rows are cut, prose wrapped."""
    head = f"{e.jobset}: {e.status}"
    lines = [head if e.status == "running" else f"{head} (priority {e.priority})"]
    lines.extend(f"what-if: {w}" for w in e.whatif)
    if e.kueue:
        lines.append(f"kueue: {e.kueue}")
    lines.extend(_expected_start(e))
    if e.status in ("placed", "partial") and e.jobs:
        lines.append("")
        lines.append("placed child Jobs:" if e.status == "placed" else "child Jobs it holds:")
        lines.extend(_where(e.jobs))
    evicted = _evicted_for(e)
    if evicted:
        lines.append("")
        lines.append(f"placed by {eviction_text(evicted)}")
    if e.replicated_jobs:
        lines.append("")
        lines.append("domains (or nodes) by reason, beside the rest of the plan:")
        for d in e.replicated_jobs:
            lines.extend("  " + line for line in _diagnosis(d))
    if e.conflict is not None:
        lines.append("")
        c = e.conflict
        if c.status == "conflict":
            minimal = "minimal" if c.minimal else "not proven minimal"
            lines.append(f"conflicting requirements ({minimal}): {c.text}")
            own = [r for r in c.requirements if r.jobset == e.jobset]
            others = [r for r in c.requirements if r.jobset != e.jobset]
            shown = others if len(others) <= MAX_OTHERS else others[: MAX_OTHERS - 1]
            lines.extend(f"  - {r.text}" for r in (*own, *shown))
            if len(shown) < len(others):
                lines.append(
                    f"  - ... and {len(others) - len(shown)} more JobSets stay admitted "
                    "(all of them in --format json)"
                )
        else:
            lines.append(f"conflict: {c.text}")
    if e.remedies:
        lines.append("")
        lines.append(f"what would make it fit (each checked by re-planning with {e.solver.name}):")
        lines.extend(f"  - {r.text}: {_domains(r.jobs)}" for r in e.remedies[:MAX_REMEDIES])
        if len(e.remedies) > MAX_REMEDIES:
            lines.append(
                f"  - ... and {len(e.remedies) - MAX_REMEDIES} more (all of them in -o json)"
            )
    if e.notes:
        lines.append("")
        lines.extend(f"note: {n}" for n in e.notes)
    if e.status != "running":
        lines.append("")
        lines.append(solver_line(e.solver))
    return "\n".join(fit_lines(lines, width)) + "\n"
