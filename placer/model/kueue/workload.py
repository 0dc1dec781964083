"""What a Kueue Workload says about its JobSet: pure readers over the Workload's JSON.

Shared by the controller's admission check (controller/decide/observe/kueue.py) and by
`placer explain --kubeconfig` (model/jobset/live_queue.py), which tells a user when Kueue, not
placer, is what a JobSet waits for.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from placer.model.messages import echo

__all__ = ["condition", "condition_true", "kueue_standing", "owner_of", "waits_for_quota"]

SHOWN_CHARS = 300
"""How much of a Kueue condition message a standing quotes."""
THEN = "; placer places it only once Kueue reserves quota"


def condition(obj: Mapping[str, Any], kind: str) -> Mapping[str, Any] | None:
    """The status condition of type `kind`, if any."""
    for c in (obj.get("status") or {}).get("conditions") or []:
        if isinstance(c, Mapping) and c.get("type") == kind:
            return c
    return None


def condition_true(obj: Mapping[str, Any], kind: str) -> bool:
    c = condition(obj, kind)
    return c is not None and c.get("status") == "True"


def owner_of(workload: Mapping[str, Any]) -> tuple[str, str] | None:
    """(kind, name) of the controlling owner (else the first owner), None without one."""
    refs = [r for r in (workload.get("metadata") or {}).get("ownerReferences") or [] if r]
    if not refs:
        return None
    ref = next((r for r in refs if r.get("controller")), refs[0])
    return str(ref.get("kind") or ""), str(ref.get("name") or "")


def _said(c: Mapping[str, Any] | None) -> str:
    text = str((c or {}).get("message") or (c or {}).get("reason") or "").strip()
    return f" (Kueue: {echo(text, limit=SHOWN_CHARS, quote=False)})" if text else ""


def waits_for_quota(workload: Mapping[str, Any]) -> bool:
    """Kueue holds it back: no quota reserved (queued, or evicted and queued again)."""
    return not condition_true(workload, "Finished") and (
        condition_true(workload, "Evicted") or not condition_true(workload, "QuotaReserved")
    )


def kueue_standing(workload: Mapping[str, Any]) -> str:
    """What Kueue still owes the Workload's JobSet before placer can place it, in a sentence;
    "" once admitted (or finished): from then on, only placer decides where and when."""
    meta = workload.get("metadata") or {}
    name = f"{meta.get('namespace')}/{meta.get('name')}"
    queue = str((workload.get("spec") or {}).get("queueName") or "")
    where = f" in LocalQueue {queue}" if queue else ""
    if condition_true(workload, "Finished") or condition_true(workload, "Admitted"):
        return ""
    if condition_true(workload, "Evicted"):
        why = _said(condition(workload, "Evicted"))
        return f"Kueue evicted Workload {name}{why}: it waits for quota again{where}{THEN}"
    if not condition_true(workload, "QuotaReserved"):
        why = _said(condition(workload, "QuotaReserved"))
        return f"Kueue has not reserved quota for Workload {name}{where}{why}{THEN}"
    checks = [
        f"{c.get('name')} {c.get('state') or 'Pending'}"
        for c in (workload.get("status") or {}).get("admissionChecks") or []
        if isinstance(c, Mapping) and c.get("state") != "Ready"
    ]
    if checks:
        return (
            f"Kueue reserved quota for Workload {name}; it waits for its admission checks: "
            + ", ".join(checks)
        )
    return f"Kueue reserved quota for Workload {name}; not admitted yet"
