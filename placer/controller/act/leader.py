"""Leader election: two replicas run, one reconciles; the Lease decides which.

The adapter holds the mechanics (`ClusterAdapter.lead`, the client's `leaderelection` module on a
coordination.k8s.io Lease for the real cluster); this module holds the policy: identity and lease
defaults, running the controller only while leading, and stopping the process when leadership is
lost, so a replica that lost the lease never writes again (the Deployment restarts it as a
follower). The renew deadline is shorter than the lease, so the old leader normally stops before
a new one can take over. Timing alone promises nothing (a paused process, a slow solve), so the
work of a leader (`Controller.run_leading`) first claims the placement ledger, and a leader whose
claim was superseded has every later commit refused (ledger.py).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from placer.controller.act.lease import LeaderSettings, default_identity, default_namespace
from placer.controller.adapter import ClusterAdapter

__all__ = ["LeaderSettings", "default_identity", "default_namespace", "run_elected"]

log = logging.getLogger(__name__)


def run_elected(
    adapter: ClusterAdapter,
    settings: LeaderSettings,
    work: Callable[[threading.Event], None],
    stop: threading.Event,
) -> bool:
    """Run `work(stop)` while this replica leads; return when `stop` is set or leadership is lost.

    Returns True if leadership was lost (the caller should exit non-zero). The election runs in a
    daemon thread: the client's elector has no way to be cancelled, and a stopping process does
    not need to release the lease (it expires after `lease_duration_s`).
    """
    lost = threading.Event()

    def started() -> None:
        log.info("%s leads (lease %s/%s)", settings.identity, settings.namespace, settings.lease)
        work(stop)

    def stopped() -> None:
        if not stop.is_set():
            log.error("%s lost the lease; stopping", settings.identity)
            lost.set()
            stop.set()

    def elect() -> None:
        try:
            adapter.lead(
                settings,
                on_started=started,
                on_stopped=stopped,
                stop=stop,
            )
        except Exception:
            log.exception("leader election failed")
            lost.set()
            stop.set()

    log.info(
        "%s waiting for the lease %s/%s", settings.identity, settings.namespace, settings.lease
    )
    threading.Thread(target=elect, daemon=True, name="leader-election").start()
    stop.wait()
    return lost.is_set()
