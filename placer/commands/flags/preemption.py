"""Flags of topology-aware preemption, for `placer plan` (and `explain`): --preemption and friends.

Read into `placer.model.preemption.PreemptionPolicy`, the one place their defaults live.
"""

from __future__ import annotations

import argparse

from placer.model.durations import format_go_duration, parse_go_duration
from placer.model.preemption import PREEMPTION_MODES, PreemptionPolicy

__all__ = ["add_preemption_args", "add_restart_cost_arg", "preemption_from_args"]

_DEFAULTS = PreemptionPolicy()


def add_restart_cost_arg(group: argparse._ArgumentGroup, which: str) -> None:
    """--restart-cost, for `which` JobSet restarts ("an evicted", "a moved"): `placer plan`'s
    preemption and `placer defrag` price a restart alike."""
    default = format_go_duration(_DEFAULTS.restart_cost_s)
    group.add_argument(
        "--restart-cost",
        metavar="DURATION",
        default=default,
        help=f"what restarting {which} JobSet costs, as a Go duration of its accelerators, on "
        "top of the work lost since its last checkpoint (placer.dev/checkpoint-interval) or "
        f"start (default {default})",
    )


def add_preemption_args(parser: argparse.ArgumentParser) -> argparse._ArgumentGroup:
    """The flags, in a group of their own (returned: `placer controller` adds its own there)."""
    group = parser.add_argument_group("preemption")
    group.add_argument(
        "--preemption",
        choices=PREEMPTION_MODES,
        default=_DEFAULTS.mode,
        help="none (default): never evict a running JobSet; lower-priority: the cpsat planner may "
        "evict whole running JobSets of lower priority, the cheapest that free the domains a "
        'blocked JobSet needs (never one annotated placer.dev/preemptible: "false"); greedy '
        "solvers never preempt",
    )
    add_restart_cost_arg(group, "an evicted")
    group.add_argument(
        "--preempt-after",
        metavar="DURATION",
        help="preempt only for a JobSet expected to wait longer than this Go duration without "
        "preemption (default: for any JobSet that cannot start now)",
    )
    return group


def preemption_from_args(args: argparse.Namespace) -> PreemptionPolicy:
    """The policy the flags give; flags a command did not register keep their defaults. A bad
    duration is a usage error naming the flag (exit 2)."""
    restart = getattr(args, "restart_cost", None)
    after = getattr(args, "preempt_after", None)
    return PreemptionPolicy(
        mode=getattr(args, "preemption", _DEFAULTS.mode),
        restart_cost_s=(
            parse_go_duration(restart, field="--restart-cost")
            if restart is not None
            else _DEFAULTS.restart_cost_s
        ),
        preempt_after_s=parse_go_duration(after, field="--preempt-after") if after else None,
    )
