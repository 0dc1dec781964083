"""The one place reasons become words: the one-line form and the detailed form.

The one-line form is what `placer plan` prints for each JobSet it leaves out and what `placer
capacity` prints for "copy N does not fit": per replicated job, Kueue-style, `<count> <reason>`
after what it needs and what is available. The detailed form is what `placer explain` lists (one
`reason_text` per line, the same text) and what `placer capacity` says about stranded capacity.
Everything here reads `placer.solver.reasons.data`; nothing counts.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection, Sequence
from decimal import Decimal

from placer.model.workload import PodShape
from placer.solver.reasons.data import HostCause, Reason, ReasonTally, RjobDiagnosis

__all__ = [
    "MAX_NAMED",
    "TOGETHER",
    "format_shape",
    "jobset_reason",
    "locality_text",
    "owner_list",
    "plural",
    "reason_lines",
    "reason_text",
    "rjob_line",
    "stranded_text",
]

MAX_NAMED = 5
"""JobSets a reason names before it counts the rest: reasons stay short on a busy fleet."""

TOGETHER = "each replicated job fits alone, but not all together beside the rest of the plan: "


def plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def owner_list(keys: Collection[str]) -> str:
    """The first JobSets by name and how many more."""
    ordered = sorted(set(keys))
    shown = ", ".join(ordered[:MAX_NAMED])
    more = len(ordered) - MAX_NAMED
    return f"{shown}, +{more} more" if more > 0 else shown


def format_shape(pod: PodShape) -> str:
    """`{google.com/tpu: 4}`: the accelerators a pod asks for, else all its requests."""
    shown = pod.accelerators or pod.requests
    return "{" + ", ".join(f"{k}: {_quantity(v, k)}" for k, v in sorted(shown.items())) + "}"


def _quantity(value: Decimal, name: str = "") -> str:
    if name == "memory" or name.endswith("storage"):
        for suffix, unit in (("Gi", 2**30), ("Mi", 2**20), ("Ki", 2**10)):
            if value >= unit and value % unit == 0:
                return f"{int(value // unit)}{suffix}"
    if value == value.to_integral_value():
        return str(int(value))
    if name == "cpu" and (value * 1000) == (value * 1000).to_integral_value():
        return f"{int(value * 1000)}m"
    return str(value.normalize())


# -- one reason --


def reason_text(tally: ReasonTally, *, taken_by_copies: int | None = None) -> str:
    """The reason as it follows its count: `held by running research/finetune-v5e`.

    `taken_by_copies`: the plan is N copies of one shape (`placer capacity`), so "taken" says so.
    """
    r = tally.reason
    if r.kind == "held":
        return f"held by running {owner_list(r.holders)}"
    if r.kind == "unlabeled":
        return r.rule
    if r.kind in ("node-selector", "affinity"):
        return f"not matching {r.rule}"
    if r.kind == "taint":
        return f"with untolerated {r.rule}"
    if r.kind == "not-ready":
        return "NotReady"
    if r.kind == "cordoned":
        return "cordoned"
    if r.kind == "too-small":
        return _too_small(r)
    if r.kind == "reserved-later":
        return f"reserved for the later start of {owner_list(r.holders)}"
    if r.kind == "reserved":
        return f"reserved for exclusive child Jobs ({owner_list(tally.jobsets)})"
    if r.kind == "no-room":
        return f"no room for one pod ({r.rule})"
    if r.kind == "taken":
        if taken_by_copies is not None:
            return (
                f"taken by the {taken_by_copies} cop{'y' if taken_by_copies == 1 else 'ies'} above"
            )
        takers = owner_list(tally.jobsets)
        return f"taken by {' or '.join(r.relations)} JobSets in this plan ({takers})"
    return "taken by its own child Jobs"


def _too_small(r: Reason) -> str:
    return (
        f"too small: fits {r.fits} of {plural(r.needed, 'pod')} ({', '.join(map(_host, r.hosts))})"
    )


def _host(cause: HostCause) -> str:
    hosts = plural(cause.hosts, "host")
    if cause.kind == "short":
        return f"{hosts}, short of {cause.what}"
    if cause.kind == "in-use":
        return f"{hosts} with {cause.what} in use"
    if cause.kind == "not-ready":
        return f"{hosts} NotReady"
    if cause.kind == "cordoned":
        return f"{hosts} cordoned"
    if cause.kind == "taint":
        return f"{hosts} with untolerated {cause.what}"
    if cause.kind == "unlabeled":
        return f"{hosts} {cause.what}"
    return f"{hosts} not matching {cause.what}"


def locality_text(d: RjobDiagnosis) -> str:
    """`at most 1 in one domain of <level> (required)`, or for the workers of a podset group
    that does not fit together `podset group g: at most 3 of the 4 pods fit beside the leader
    (leader) in one domain of <level> (required)`; empty when locality is not the cause."""
    if d.group is not None:
        g = d.group
        where = f" in one domain of {g.level} (required)" if g.level else ""
        return (
            f"podset group {g.group}: at most {g.most} of the {d.needed} pods fit beside the "
            f"leader ({g.leader}){where}"
        )
    if d.locality is None:
        return ""
    unit = " pods" if d.unit == "pod" else ""
    return f"at most {d.locality.most}{unit} in one domain of {d.locality.level} (required)"


# -- one replicated job, one JobSet --


def _listing(tallies: tuple[ReasonTally, ...], taken_by_copies: int | None) -> str:
    """The counts in order; where more than `MAX_NAMED` of them name running JobSets or
    reservations, one count for all of those (`_merged`)."""
    kinds: Counter[str] = Counter(t.reason.kind for t in tallies)
    many = {k for k in _MERGED if kinds[k] > MAX_NAMED}
    parts: list[str] = []
    merged: set[str] = set()
    for t in tallies:
        kind = t.reason.kind
        if kind not in many:
            parts.append(f"{t.count} {reason_text(t, taken_by_copies=taken_by_copies)}")
        elif kind not in merged:
            merged.add(kind)
            parts.append(_merged(kind, [u for u in tallies if u.reason.kind == kind]))
    return ", ".join(parts)


_MERGED = {"held": "held by running", "reserved-later": "reserved for the later start of"}
"""Reasons counted apart per JobSet named, so one per running JobSet on a busy fleet: a reason
line of 10,000 nodes with 1,000 runs read "4 held by running a, 4 held by running b, ..." for
38,000 characters (RESULTS-reasons, round 38)."""


def _merged(kind: str, tallies: Sequence[ReasonTally]) -> str:
    """`1040 held by running a, b, c, d, e, +255 more`: the domains (nodes) of every tally, and
    the JobSets named, those naming the most first. The form of one tally's text, so the
    controller names hold tokens in it as in any other (`holder_names.named`)."""
    per: Counter[str] = Counter()
    for t in tallies:
        for holder in t.reason.holders:
            per[holder] += t.count
    ordered = sorted(per, key=lambda h: (-per[h], h))
    shown = ", ".join(ordered[:MAX_NAMED])
    more = len(ordered) - MAX_NAMED
    names = f"{shown}, +{more} more" if more > 0 else shown
    return f"{sum(t.count for t in tallies)} {_MERGED[kind]} {names}"


NO_DOMAIN = "no node has that label"
"""Where a key has no domain at all: every domain is the nodes sharing one value of the label."""


def rjob_line(
    d: RjobDiagnosis,
    *,
    taken_by_copies: int | None = None,
    listings: dict[tuple[ReasonTally, ...], str] | None = None,
) -> str:
    """The diagnosis of one replicated job as one Kueue-style line.

    `listings` keeps the worded counts of a `reason_lines` call to the next: the JobSets a plan
    leaves out mostly see the cluster alike (the same counts), and on a large fleet those counts
    run to hundreds of reasons.
    """
    if listings is None:
        reasons = _listing(d.tallies, taken_by_copies)
    else:
        found = listings.get(d.tallies)
        if found is None:
            found = listings[d.tallies] = _listing(d.tallies, taken_by_copies)
        reasons = found
    if d.unit == "domain":
        line = (
            f"{d.name}: needs {plural(d.needed, 'domain')} of {d.exclusive_key} for "
            f"{plural(d.pods_per_job, 'pod')} of {format_shape(d.pod)}; "
        )
        # a key no node carries has no domain: "0 available of 0" left the reader to guess
        line += f"{d.available} available of {d.total}" if d.total else NO_DOMAIN
        line += f": {reasons}" if reasons else ""
    else:
        line = (
            f"{d.name}: needs {plural(d.needed, 'pod')} of {format_shape(d.pod)}; fits "
            f"{d.available} on {d.nodes_with_room or 0} of {plural(d.total, 'node')}"
        )
        line += f"; excluded: {reasons}" if reasons else ""
    locality = locality_text(d)
    return line + (f"; {locality}" if locality else "")


def reason_lines(
    diagnosis: Sequence[RjobDiagnosis],
    *,
    taken_by_copies: int | None = None,
    listings: dict[tuple[ReasonTally, ...], str] | None = None,
) -> list[str]:
    """The replicated jobs that cannot get what they need, one line each; when each could alone,
    one line saying they do not fit together."""
    lines = [rjob_line(d, taken_by_copies=taken_by_copies, listings=listings) for d in diagnosis]
    short = [line for line, d in zip(lines, diagnosis, strict=True) if not d.fits]
    if short:
        return short
    if not diagnosis:
        return ["no child Jobs to place"]
    if taken_by_copies is not None and len(lines) == 1:
        # by these counts one more copy fits, yet the planner placed no further copy
        copies = taken_by_copies
        return [f"{lines[0]}, yet the planner placed no further copy beside the {copies} above"]
    return [TOGETHER + "; ".join(lines)]


def jobset_reason(
    diagnosis: Sequence[RjobDiagnosis],
    *,
    listings: dict[tuple[ReasonTally, ...], str] | None = None,
) -> str:
    """Why a JobSet is left out of a plan, in one line: what `placer plan` prints. A planner
    wording every JobSet it leaves out passes one `listings` dict to all the calls."""
    return "; ".join(reason_lines(diagnosis, listings=listings))


# -- stranded capacity --

_STRANDED = {
    "held": "held by running JobSets",
    "unlabeled": "missing a declared topology label",
    "node-selector": "not matching the shapes' nodeSelector",
    "affinity": "not matching the shapes' node affinity",
    "taint": "with a taint the shapes do not tolerate",
    "not-ready": "NotReady",
    "cordoned": "cordoned",
    "too-small": "too small for every shape",
    "reserved-later": "reserved for later starts",
}


def stranded_text(kind: str) -> str:
    """Why free accelerators of a domain type are stranded, after their count."""
    return _STRANDED.get(kind, kind)
