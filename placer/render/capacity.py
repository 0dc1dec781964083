"""`placer capacity` output: tables (default) or the report's JSON document.

The JSON document is the report's `model_dump(mode="json")`; with `--cheapest` it embeds the plan
document `placer plan --format json` prints, so tools read one schema for plans everywhere.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TYPE_CHECKING

from pydantic import BaseModel

from placer.model.workload import JobSetRequest
from placer.render.explain import format_rows
from placer.render.table import render_table
from placer.solver.reasons.wording import stranded_text

if TYPE_CHECKING:  # importing the capacity package loads CP-SAT: every CLI command would pay it
    from placer.solver.capacity.result import CapacityReport, CheapestReport

__all__ = ["render_capacity", "render_cheapest", "render_report_json"]


def render_report_json(report: BaseModel) -> str:
    return json.dumps(report.model_dump(mode="json"), indent=2) + "\n"


def _yes(flag: bool) -> str:
    return "yes" if flag else "no"


def render_capacity(report: CapacityReport) -> str:
    lines = [f"what-if: {w}" for w in report.whatif]
    if lines:
        lines.append("")
    rows = [("JOBSET", "ACCELERATORS/COPY", "MORE COPIES", "CHECKED")]
    rows += [
        (s.jobset, str(s.accelerators_per_copy), str(s.copies), _yes(s.verified))
        for s in report.shapes
    ]
    lines.extend(format_rows(rows))
    lines.append("")
    for s in report.shapes:
        lines.append(f"{s.jobset}: copy {s.copies + 1} does not fit: {s.limit}")
    if report.mix is not None:
        mix = report.mix
        lines.append("")
        lines.append(
            f"largest mix that fits together: {mix.accelerators} accelerators "
            f"({mix.status}, checked: {_yes(mix.verified)})"
        )
        mix_rows = [("JOBSET", "COPIES", "ACCELERATORS")]
        mix_rows += [(e.jobset, str(e.copies), str(e.accelerators)) for e in mix.entries]
        lines.extend("  " + line for line in format_rows(mix_rows))
    if report.domain_types:
        lines.append("")
        lines.append(
            "accelerators per domain type (stranded: free, but no shape given can use it):"
        )
        type_rows = [
            ("KEY", "TYPE", "DOMAINS", "TOTAL", "FREE", "USABLE", "STRANDED", "IDLE AFTER MIX")
        ]
        for d in report.domain_types:
            idle = "-" if d.idle_after_mix is None else str(d.idle_after_mix)
            type_rows.append(
                (
                    d.key,
                    d.type,
                    str(d.domains),
                    str(d.accelerators),
                    str(d.free),
                    str(d.usable),
                    str(d.stranded),
                    idle,
                )
            )
        lines.extend("  " + line for line in format_rows(type_rows))
        for d in report.domain_types:
            if d.stranded_by:
                why = ", ".join(
                    f"{n} {stranded_text(reason)}" for reason, n in d.stranded_by.items()
                )
                lines.append(f"  stranded in {d.type}: {why}")
    lines.extend(f"note: {n}" for n in report.notes)
    return "\n".join(lines) + "\n"


def render_cheapest(report: CheapestReport, jobsets: Sequence[JobSetRequest] = ()) -> str:
    lines = [f"what-if: {w}" for w in report.whatif]
    if lines:
        lines.append("")
    if report.status == "INFEASIBLE":
        lines.append("no purchase from the catalogue fits every JobSet")
    else:
        rows = [("POOL TYPE", "POOLS", "HOSTS/POOL", "PRICE/HOUR", "SUBTOTAL/HOUR")]
        rows += [
            (
                p.type,
                str(p.count),
                str(p.hosts),
                f"{p.price_per_hour:.2f}",
                f"{p.subtotal:.2f}",
            )
            for p in report.pools
        ]
        lines.extend(format_rows(rows))
        lines.append("")
        lines.append(f"total {report.price_per_hour:.2f} per hour ({report.status})")
    lines.extend(f"note: {n}" for n in report.notes)
    if report.plan is not None:
        lines.append("")
        where = "the existing cluster plus these pools" if report.on_existing_cluster else "them"
        lines.append(f"plan on {where}:")
        lines.append(render_table(report.plan, jobsets).rstrip("\n"))
    return "\n".join(lines) + "\n"
