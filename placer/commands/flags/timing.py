"""Flags of time-aware planning, shared by `plan`, `explain` and `controller`: --reservations
and friends.

`--default-duration CLASS=D` names a PriorityClass whose value only the cluster knows: `plan` and
`explain` resolve it once the snapshot is read, the controller in every cycle from the classes it
lists (`TimePolicy.for_classes`, one implementation for both).
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping

from placer.commands.flags.argtypes import number, rfc3339, whole_number
from placer.model.durations import parse_go_duration, parse_rfc3339
from placer.model.errors import InputError
from placer.model.messages import echo
from placer.model.options import DEFAULT_DURATION_S, TimePolicy

__all__ = ["DEFAULT_GUARD", "add_guard_arg", "add_time_args", "guard_s", "time_policy_from_args"]

DEFAULT_GUARD = "30m"

_DEFAULTS = TimePolicy()


def add_time_args(parser: argparse.ArgumentParser, *, planning_instant: bool = True) -> None:
    """The flags; `planning_instant=False` leaves out `--now` (the controller plans at the wall
    clock)."""
    group = parser.add_argument_group("time-aware planning")
    group.add_argument(
        "--reservations",
        choices=("none", "head", "all"),
        default=_DEFAULTS.reservations,
        help="none: plan who starts now (default); head: reserve the future start of the first "
        "--reservation-head JobSets that must wait (EASY backfill); all: of every waiting JobSet "
        "(conservative backfill). Others start now only where they delay no reservation",
    )
    group.add_argument(
        "--schedule",
        choices=("greedy", "cpsat"),
        default=_DEFAULTS.schedule,
        help="who decides when waiting JobSets start: greedy (default: the reservation pass, "
        "each JobSet in queue order the earliest slot left) or cpsat (one CP-SAT model over "
        "time for the whole queue, the greedy pass as its hint and fallback; every JobSet it "
        "does not start now gets a reservation, which holds domains for a JobSet stating no run "
        "time only within the first --reservation-head waiting or past --max-wait)",
    )
    group.add_argument(
        "--schedule-search",
        choices=("fast", "repeatable"),
        default=_DEFAULTS.schedule_search,
        help="with --schedule cpsat: fast (default) bounds the search by wall time, so two runs "
        "may differ with the machine's load; repeatable bounds it by CP-SAT's deterministic time, "
        "so the same input gives the same schedule (slower)",
    )
    group.add_argument(
        "--reservation-head",
        metavar="N",
        type=whole_number(1, 100_000),
        default=_DEFAULTS.head,
        help=f"with --reservations head: how many waiting JobSets get one; with --schedule "
        f"cpsat: how many of those stating no run time hold one (default {_DEFAULTS.head})",
    )
    group.add_argument(
        "--default-duration",
        metavar="[CLASS=]DURATION",
        action="append",
        default=[],
        help="expected run time of JobSets that state none (no placer.dev/expected-duration "
        "annotation, no activeDeadlineSeconds), as a Go duration; CLASS=DURATION sets it for one "
        "PriorityClass; repeatable (default 4h)",
    )
    if planning_instant:
        group.add_argument(
            "--now",
            metavar="RFC3339",
            type=rfc3339,
            help="the planning instant, e.g. 2026-12-01T06:00:00Z (default: the wall clock), so a "
            "plan over time is reproducible",
        )
    group.add_argument(
        "--aging-rate",
        metavar="POINTS_PER_HOUR",
        type=number(0),
        default=_DEFAULTS.aging_per_hour,
        help="priority points a waiting JobSet gains per hour in the reservation order "
        "(default 0: strict priority tiers)",
    )
    group.add_argument(
        "--max-wait",
        metavar="DURATION",
        help="a JobSet waiting longer than this (since creation) always gets a reservation, "
        "ahead of every priority tier (longest waiting first)",
    )


def time_policy_from_args(
    args: argparse.Namespace, priority_classes: Mapping[str, int] | None
) -> TimePolicy:
    """The policy the flags give; with `--preemption lower-priority` time-aware planning is a
    usage error (exit 2), not supported together yet. `--default-duration CLASS=DURATION`
    entries are kept by class name and resolved against `priority_classes`
    (`TimePolicy.for_classes`: an unknown class is a usage error); `None` leaves them by name,
    for a caller that learns the classes later (the controller, once per cycle)."""
    default_s = DEFAULT_DURATION_S
    by_class: dict[str, float] = {}
    for text in getattr(args, "default_duration", None) or []:
        name, sep, value = text.rpartition("=")
        seconds = parse_go_duration(value, field="--default-duration")
        if seconds <= 0:
            raise InputError("must be longer than 0s", field="--default-duration", code="usage")
        if not sep:
            default_s = seconds
        elif not name:
            raise InputError(
                f"{echo(text)}: give CLASS=DURATION or a plain DURATION",
                field="--default-duration",
                code="usage",
            )
        else:
            by_class[name] = seconds
    max_wait = getattr(args, "max_wait", None)
    now = getattr(args, "now", None)
    policy = TimePolicy(
        now=parse_rfc3339(now) if now is not None else None,
        reservations=getattr(args, "reservations", _DEFAULTS.reservations),
        head=getattr(args, "reservation_head", _DEFAULTS.head),
        schedule=getattr(args, "schedule", _DEFAULTS.schedule),
        schedule_search=getattr(args, "schedule_search", _DEFAULTS.schedule_search),
        default_duration_s=default_s,
        default_duration_by_class=by_class,
        aging_per_hour=getattr(args, "aging_rate", _DEFAULTS.aging_per_hour),
        max_wait_s=parse_go_duration(max_wait, field="--max-wait") or None if max_wait else None,
    )
    return policy if priority_classes is None else policy.for_classes(priority_classes)


def add_guard_arg(parser: argparse._ActionsContainer) -> None:
    parser.add_argument(
        "--reservation-guard",
        metavar="DURATION",
        default=DEFAULT_GUARD,
        help="keep pods that are not placer's out of a domain whose reservation starts within "
        f"this Go duration (default {DEFAULT_GUARD}; 0s: only once it has started)",
    )


def guard_s(args: argparse.Namespace) -> float:
    return parse_go_duration(args.reservation_guard, field="--reservation-guard")
