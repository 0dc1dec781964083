"""Running the controller: the watch loop, a `--once` pass, and an elected leader's work.

`Controller` (reconcile.py) decides and writes one cycle at a time; these functions decide when a
cycle runs. `run_loop` keeps the cache fed by watches and runs a cycle after every change
(debounced), when the gather window closes and every `replan_s`; it relists everything every
`resync_s`, and at least every `replan_s` while a watch keeps failing; a cycle that finds a
flag contradicted by the cluster (a usage `InputError`) stops it, for the command to exit 2.
`run_once` lists (retrying temporary errors for `list_retry_s`) and runs one cycle.
`run_leading` is the elected leader's work: claim the placement ledger (a new term, see
ledger.py), then `run_loop`; a leader that finds itself deposed stops.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Protocol

from placer.controller.act.cache import ClusterCache
from placer.controller.act.commit import claim
from placer.controller.act.executor import RetryPolicy
from placer.controller.adapter import ClusterAdapter
from placer.controller.config import ControllerConfig
from placer.controller.decide.records.ledger import Deposed, Fence
from placer.controller.metrics import Metrics
from placer.controller.report import CycleReport
from placer.model.errors import ClusterError, InputError, PlacerError

__all__ = [
    "Reconciler",
    "claim_ledger",
    "relist_with_retries",
    "run_leading",
    "run_loop",
    "run_once",
]

log = logging.getLogger(__name__)


class Reconciler(Protocol):
    """What running cycles needs of the controller (`reconcile.Controller` is the one): a
    cycle, a relist, the cache fed by watches, and where to record a claimed term, a deposition
    or a configuration error. Named here so that the loop does not import the cycle it runs."""

    adapter: ClusterAdapter
    config: ControllerConfig
    cache: ClusterCache
    metrics: Metrics
    retry: RetryPolicy
    clock: Callable[[], float]
    sleep: Callable[[float], None]
    fence: Fence | None
    deposed: bool
    misconfigured: InputError | None

    def relist(self) -> None: ...

    def run_cycle(self, *, force_plan: bool = False) -> CycleReport: ...


def relist_with_retries(ctl: Reconciler, stop: threading.Event | None = None) -> None:
    """`relist`, retrying temporary API errors (429, 5xx, connection errors) with backoff for
    up to `list_retry_s`; then (or at once for any other error) the `ClusterError` is
    raised."""
    deadline = ctl.clock() + ctl.config.list_retry_s
    delay = 0.5
    while True:
        try:
            ctl.relist()
            return
        except ClusterError as e:
            left = deadline - ctl.clock()
            if not e.temporary or left <= 0 or (stop is not None and stop.is_set()):
                raise
            wait = min(delay, left)
            log.warning("listing failed (%s); retrying in %.1fs", e, wait)
            if stop is not None:
                stop.wait(wait)
            else:
                ctl.sleep(wait)
            delay = min(10.0, delay * 2)


def run_once(ctl: Reconciler) -> CycleReport:
    """List everything (retrying temporary errors), run one full cycle planning every pending
    JobSet now, return."""
    relist_with_retries(ctl)
    return ctl.run_cycle(force_plan=True)


def claim_ledger(ctl: Reconciler, stop: threading.Event) -> bool:
    """An elected leader's first write: a new term in the ledger (retried until `stop`)."""
    delay = 0.5
    while not stop.is_set():
        try:
            ctl.fence = claim(
                ctl.adapter,
                ctl.config.ledger_namespace,
                ctl.config.identity,
                lease=ctl.config.lease,
                policy=ctl.retry,
                sleep=ctl.sleep,
                on_object=ctl.cache.record,
            )
            return True
        except ClusterError as e:
            log.warning("claiming the ledger failed (%s); retrying in %.1fs", e, delay)
            stop.wait(delay)
            delay = min(10.0, delay * 2)
    return False


def run_leading(ctl: Reconciler, stop: threading.Event) -> None:
    """The elected leader's work: claim the ledger, then watch and reconcile until `stop`."""
    if claim_ledger(ctl, stop):
        run_loop(ctl, stop)


def run_loop(ctl: Reconciler, stop: threading.Event) -> None:
    """Watch and reconcile until `stop` is set (or this replica is deposed)."""
    ctl.metrics.leader.set(1)
    try:
        _relist_until_ok(ctl, stop)
        ctl.cache.start_watches(stop)
        last_resync = last_relist = ctl.clock()
        seen = -1
        wake: float | None = None
        failures = 0
        while not stop.is_set():
            timeout = ctl.config.replan_s if wake is None else max(0.0, wake)
            timeout = min(timeout, max(0.0, ctl.config.resync_s - (ctl.clock() - last_resync)))
            ctl.cache.wait_for_change(seen, timeout, stop)
            if stop.is_set():
                break
            stop.wait(ctl.config.debounce_s)
            seen = ctl.cache.version
            try:
                now = ctl.clock()
                if now - last_resync >= ctl.config.resync_s or (
                    ctl.cache.unhealthy and now - last_relist >= ctl.config.replan_s
                ):
                    ctl.relist()
                    last_resync = last_relist = ctl.clock()
                    seen = ctl.cache.version
                report = ctl.run_cycle()
                wake = report.wake_in_s
                failures = 0
            except Deposed as e:
                log.error("deposed: %s; stopping", e)
                ctl.deposed = True
                stop.set()
            except PlacerError as e:
                if isinstance(e, InputError) and e.code == "usage":
                    # A flag the cluster contradicts (an unknown PriorityClass): no retry fixes it.
                    log.error("stopping on a configuration error: %s", e)
                    ctl.misconfigured = e
                    stop.set()
                    break
                failures += 1
                log.error("reconcile cycle failed: %s", e)
                stop.wait(min(30.0, 0.5 * 2 ** min(failures, 6)))
            except Exception:  # a bug must not take the controller down with it
                failures += 1
                log.exception("reconcile cycle crashed")
                stop.wait(min(30.0, 0.5 * 2 ** min(failures, 6)))
    finally:
        ctl.metrics.leader.set(0)


def _relist_until_ok(ctl: Reconciler, stop: threading.Event) -> None:
    delay = 0.5
    while not stop.is_set():
        try:
            ctl.relist()
            return
        except PlacerError as e:
            log.warning("initial list failed (%s); retrying in %.1fs", e, delay)
            stop.wait(delay)
            delay = min(30.0, delay * 2)
