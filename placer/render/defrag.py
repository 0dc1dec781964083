"""`placer defrag`'s table: each move, where it goes, what it costs, and what it starts.

A move restarts a running JobSet whole in other free domains now; its gain is the blocked
JobSets that then start on what it frees (a JobSet started by two moves counts for both).
"""

from __future__ import annotations

from placer.model.plan import Plan
from placer.model.preemption import NOT_MOVED
from placer.render.table import compact_list, solver_line

__all__ = ["render_defrag"]

HEADERS = ("MOVE", "PRIORITY", "TO", "COST (CHIP-HOURS)", "STARTS", "GAIN (ACCELERATORS)")


def render_defrag(plan: Plan) -> str:
    """The moves, then a summary line and the solver line."""
    outcomes = {o.key: o for o in plan.jobsets}
    moved = {p.key for p in plan.preempted}
    rows: list[tuple[str, ...]] = [HEADERS]
    for p in plan.preempted:
        to = sorted({j.domain.value for j in outcomes[p.key].jobs if j.domain is not None})
        gain = sum(outcomes[k].accelerators for k in p.makes_room_for)
        rows.append(
            (
                p.key,
                str(p.priority),
                compact_list(to),
                f"{p.cost_chip_hours:.1f}",
                ", ".join(p.makes_room_for),
                str(gain),
            )
        )
    widths = [max(len(r[i]) for r in rows) for i in range(len(HEADERS))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in rows]
    if not plan.preempted:
        lines = ["no move lets a blocked JobSet start"]
    pending = [o for o in plan.jobsets if o.key not in moved and o.reason != NOT_MOVED]
    started = [o for o in pending if o.status == "placed"]
    lines.append("")
    lines.append(
        f"{len(plan.preempted)} move{'' if len(plan.preempted) == 1 else 's'}; "
        f"{len(started)} of {len(pending)} pending JobSets start "
        f"({sum(o.accelerators for o in started)} accelerators), "
        f"{sum(p.cost_chip_hours for p in plan.preempted):.1f} chip-hours restarted"
    )
    lines.append(solver_line(plan.solver))
    return "\n".join(lines) + "\n"
