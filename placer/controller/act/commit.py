"""Committing into the placement ledger: the API calls behind ledger.py's pure decisions.

- `commit`: one compare-and-swap of the ledger (create when it does not exist yet, else a merge
  patch preconditioned on the resourceVersion the cycle decided on). A 409 is not retried here:
  the ledger changed under the cycle, whose plan may now clash, so the fresh ledger is read back and
  handed to the cache and the cycle plans again from it (`CommitResult.conflict`). Temporary errors
  are retried with the executor's policy. A leader's commit is refused before it is sent when the
  ledger's fence is not its own (`Deposed`).
- `claim`: an elected leader's first write, bumping the ledger's term (see ledger.py).
- `confirm_gone`: entries whose JobSet is missing from the cache (or has another uid there) are
  released only once a read of the JobSet itself says it is gone: a cache that has not seen a new
  JobSet yet must not free the domains another controller just gave it.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import partial

from placer.controller.act.executor import RetryPolicy, with_retries
from placer.controller.adapter import ClusterAdapter, Kind, Obj
from placer.controller.decide.records.ledger import (
    LEDGER_NAME,
    Fence,
    Ledger,
    LedgerChange,
    LedgerEntry,
    ledger_object,
    ledger_patch,
    read_ledger,
)
from placer.model.errors import ClusterError

__all__ = ["CommitResult", "claim", "commit", "confirm_gone", "read_fresh"]

log = logging.getLogger(__name__)

CLAIM_ATTEMPTS = 10


@dataclass(frozen=True)
class CommitResult:
    committed: bool
    ledger: Ledger
    """After a commit: the ledger as written; after a conflict: as read back."""
    conflict: bool = False


def read_fresh(
    adapter: ClusterAdapter,
    namespace: str,
    name: str,
    *,
    policy: RetryPolicy,
    sleep: Callable[[float], None],
    on_object: Callable[[Kind, Obj], None],
) -> Ledger:
    """The ledger as the API server has it now (empty when it does not exist)."""
    try:
        get = partial(adapter.get, "configmaps", name, namespace=namespace)
        obj = with_retries(get, policy, sleep)
    except ClusterError as e:
        if e.status != 404:
            raise
        return Ledger(namespace=namespace, name=name)
    on_object("configmaps", obj)
    return read_ledger(obj, namespace)


def commit(
    adapter: ClusterAdapter,
    ledger: Ledger,
    change: LedgerChange,
    *,
    policy: RetryPolicy | None = None,
    sleep: Callable[[float], None] = time.sleep,
    on_object: Callable[[Kind, Obj], None] = lambda kind, obj: None,
) -> CommitResult:
    """Write `change` on top of `ledger`, or report that the ledger moved on (see module doc).

    Raises `Deposed` when `change` carries a leader's fence the ledger no longer shows, and
    `ClusterError` when the API server refuses for another reason or stays unavailable.
    """
    policy = policy or RetryPolicy()
    change.check_fence(ledger)
    try:
        if ledger.exists:
            call = partial(
                adapter.patch,
                "configmaps",
                ledger.name,
                ledger_patch(ledger, change),
                namespace=ledger.namespace,
            )
        else:
            call = partial(adapter.create, "configmaps", ledger_object(ledger, change))
        written = with_retries(call, policy, sleep)
    except ClusterError as e:
        if e.status not in (404, 409) or (e.status == 404 and not ledger.exists):
            raise
        # 409: another writer committed since we read; 404: the ledger was deleted meanwhile.
        fresh = read_fresh(
            adapter, ledger.namespace, ledger.name, policy=policy, sleep=sleep, on_object=on_object
        )
        log.info(
            "ledger %s/%s changed since this cycle read it (version %s -> %s); planning again",
            ledger.namespace,
            ledger.name,
            ledger.resource_version or "none",
            fresh.resource_version or "none",
        )
        change.check_fence(fresh)
        return CommitResult(committed=False, ledger=fresh, conflict=True)
    on_object("configmaps", written)
    return CommitResult(committed=True, ledger=read_ledger(written, ledger.namespace))


def claim(
    adapter: ClusterAdapter,
    namespace: str,
    identity: str,
    *,
    lease: str = "",
    policy: RetryPolicy | None = None,
    sleep: Callable[[float], None] = time.sleep,
    on_object: Callable[[Kind, Obj], None] = lambda kind, obj: None,
) -> Fence:
    """Start a new term under `lease` (`namespace/name`) in the ledger of `namespace` (the
    ConfigMap `LEDGER_NAME`) for `identity`: what an elected leader does before it plans. Only
    leaders of the same Lease depose each other."""
    name = LEDGER_NAME
    policy = policy or RetryPolicy()
    for _ in range(CLAIM_ATTEMPTS):
        ledger = read_fresh(
            adapter, namespace, name, policy=policy, sleep=sleep, on_object=on_object
        )
        fence = Fence(holder=identity, term=ledger.fence_of(lease).term + 1, lease=lease)
        result = commit(
            adapter,
            ledger,
            LedgerChange(fence=fence, claim=True),
            policy=policy,
            sleep=sleep,
            on_object=on_object,
        )
        if result.committed:
            log.info("%s claimed ledger %s/%s at term %d", identity, namespace, name, fence.term)
            return fence
    raise ClusterError(
        f"could not claim the ledger {namespace}/{name}: still conflicting after "
        f"{CLAIM_ATTEMPTS} tries",
        status=409,
        temporary=True,
    )


def confirm_gone(
    adapter: ClusterAdapter,
    suspects: Mapping[str, LedgerEntry],
    *,
    policy: RetryPolicy | None = None,
    sleep: Callable[[float], None] = time.sleep,
    limit: int = 20,
) -> set[str]:
    """The keys of `suspects` whose JobSet is really gone (404, or another uid). At most `limit`
    reads per call; an error keeps the entry (it is asked again next cycle)."""
    policy = policy or RetryPolicy(attempts=2)
    gone: set[str] = set()
    for key, entry in sorted(suspects.items())[:limit]:
        namespace, _, name = entry.owner.partition("/")
        try:
            obj = with_retries(
                partial(adapter.get, "jobsets", name, namespace=namespace), policy, sleep
            )
        except ClusterError as e:
            if e.status == 404:
                gone.add(key)
            else:
                log.info("cannot tell whether %s is gone (%s); its entry stays", entry.owner, e)
            continue
        uid = str((obj.get("metadata") or {}).get("uid") or "")
        if entry.uid and uid and uid != entry.uid:
            gone.add(key)
    return gone
