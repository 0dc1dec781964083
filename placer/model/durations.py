"""How long a JobSet is expected to run, and the instant a plan is made for.

Time-aware planning (reservations, backfill) needs an expected run time per JobSet. Users state it
the way Kubernetes states durations elsewhere (a Go duration string such as `90m` or `2h30m`), in
the annotation `placer.dev/expected-duration`; failing that, the child Jobs' `activeDeadlineSeconds`
bound the run (like a Slurm time limit); failing both, the planner's default applies, per priority
class when one is configured. The model layer only parses: which default applies is the caller's.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Literal

from placer.model.errors import InputError
from placer.model.messages import echo

__all__ = [
    "EXPECTED_DURATION",
    "MAX_DURATION_S",
    "DurationSource",
    "ExpectedDuration",
    "format_go_duration",
    "format_rfc3339",
    "jobset_expected_duration",
    "parse_go_duration",
    "parse_rfc3339",
]

EXPECTED_DURATION = "placer.dev/expected-duration"
MAX_DURATION_S = 10 * 365 * 24 * 3600.0
"""Ten years: past this a duration is a typo, and keeping it bounded keeps timelines finite."""

DurationSource = Literal["annotation", "active-deadline", "default"]
INT64_MAX = 2**63 - 1
"""`activeDeadlineSeconds` is an int64 in the Job API."""

_UNITS_S = {
    "ns": 1e-9,
    "us": 1e-6,
    "µs": 1e-6,  # Go accepts both micro signs
    "μs": 1e-6,
    "ms": 1e-3,
    "s": 1.0,
    "m": 60.0,
    "h": 3600.0,
}
_PART = re.compile(r"([0-9]+(?:\.[0-9]*)?|\.[0-9]+)(ns|us|µs|μs|ms|s|m|h)")
"""ASCII digits only, as Go's parser reads them (`\\d` would take Arabic and full-width ones)."""


def parse_go_duration(text: str, *, source: str = "", obj: str = "", field: str = "") -> float:
    """Seconds in a Go duration (`time.ParseDuration` syntax: `1h30m`, `90m`, `1.5h`, `300ms`).

    Negative durations are refused (a run time cannot be negative), and so are values past
    `MAX_DURATION_S`; `0` alone is allowed, as in Go.
    """

    def bad(message: str) -> InputError:
        return InputError(message, source=source, obj=obj, field=field, code="duration")

    raw = text.strip()
    if not raw:
        raise bad("empty duration; use a Go duration such as 90m or 6h")
    if raw.startswith("-"):
        raise bad(f"negative duration {echo(text)}")
    body = raw[1:] if raw.startswith("+") else raw
    if body == "0":
        return 0.0
    total = 0.0
    pos = 0
    for match in _PART.finditer(body):
        if match.start() != pos:
            break
        total += float(match.group(1)) * _UNITS_S[match.group(2)]
        pos = match.end()
    if pos != len(body) or pos == 0:
        raise bad(f"invalid duration {echo(text)}; use a Go duration such as 90m, 6h or 1h30m")
    if not math.isfinite(total) or total > MAX_DURATION_S:
        raise bad(f"duration {echo(text)} is longer than {format_go_duration(MAX_DURATION_S)}")
    return total


def format_go_duration(seconds: float) -> str:
    """The shortest Go-style text for whole seconds (`1h30m`, `45s`, `0s`), for tables and logs."""
    rest = round(seconds)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    parts = [
        f"{hours}h" if hours else "",
        f"{minutes}m" if minutes else "",
        f"{secs}s" if secs else "",
    ]
    return "".join(parts) or "0s"


def parse_rfc3339(text: str, *, field: str = "--now") -> datetime:
    """An RFC 3339 instant (`2026-12-01T06:00:00Z`), always timezone-aware, for `--now`."""
    raw = text.strip()
    if not re.fullmatch(
        r"\d{4}-\d\d-\d\d[Tt ]\d\d:\d\d:\d\d(\.\d+)?([Zz]|[+-]\d\d:\d\d)", raw, re.ASCII
    ):
        raise InputError(
            f"{echo(text)} is not an RFC 3339 time such as 2026-12-01T06:00:00Z",
            field=field,
            code="time",
        )
    try:
        value = datetime.fromisoformat(raw.replace("z", "Z"))
    except ValueError as e:
        raise InputError(f"{echo(text)}: {e}", field=field, code="time") from e
    return value.astimezone(UTC)


def format_rfc3339(epoch_s: float) -> str:
    """Epoch seconds as the API server writes a timestamp: RFC 3339, UTC, whole seconds (the
    fraction dropped), as in `2026-12-01T06:00:00Z`."""
    return datetime.fromtimestamp(epoch_s, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass(frozen=True)
class ExpectedDuration:
    """A JobSet's expected run time and where it came from (reports say which)."""

    seconds: float | None
    """None when the JobSet states nothing: the planner's default applies."""
    source: DurationSource


def jobset_expected_duration(
    obj: Mapping[str, Any], *, source: str = "", key: str = ""
) -> ExpectedDuration:
    """The annotation, else the longest child Job `activeDeadlineSeconds`, else "default" (None).

    The longest deadline bounds the JobSet: every child Job runs at once, so the JobSet cannot
    outlive its slowest child. A deadline missing on some replicated jobs does not bound those, so
    the deadline is used only when every replicated job states one.
    """
    metadata = obj.get("metadata")
    annotations = metadata.get("annotations") if isinstance(metadata, Mapping) else None
    text = annotations.get(EXPECTED_DURATION) if isinstance(annotations, Mapping) else None
    if text is not None:
        field = f"metadata.annotations[{EXPECTED_DURATION}]"
        if not isinstance(text, str):
            raise InputError("must be a string such as 90m", source=source, obj=key, field=field)
        return ExpectedDuration(
            parse_go_duration(text, source=source, obj=key, field=field), "annotation"
        )
    deadlines: list[float] = []
    spec = obj.get("spec")
    rjobs = spec.get("replicatedJobs") if isinstance(spec, Mapping) else None
    for i, rj in enumerate(rjobs if isinstance(rjobs, list) else []):
        template = rj.get("template") if isinstance(rj, Mapping) else None
        job = template.get("spec") if isinstance(template, Mapping) else None
        value = job.get("activeDeadlineSeconds") if isinstance(job, Mapping) else None
        if value is None:
            return ExpectedDuration(None, "default")
        field = f"spec.replicatedJobs[{i}].template.spec.activeDeadlineSeconds"
        if isinstance(value, bool) or not isinstance(value, int) or not 0 < value <= INT64_MAX:
            raise InputError(
                f"must be a positive integer of at most {INT64_MAX} (int64), got {echo(value)}",
                source=source,
                obj=key,
                field=field,
            )
        deadlines.append(min(float(value), MAX_DURATION_S))
    if not deadlines:
        return ExpectedDuration(None, "default")
    return ExpectedDuration(max(deadlines), "active-deadline")
