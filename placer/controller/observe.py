"""The observe phase of a reconcile cycle: the cache read once into an `Observed`, with what
parsing it costs remembered across cycles.

Why a class of its own: each cycle reads the whole cluster, and at 10,000 nodes rebuilding the
planner's snapshot, parsing every JobSet manifest and every pod's references again would take
most of a cycle. The snapshot is rebuilt only when the cache's capacity-changing objects changed
(`ClusterState.snapshot_version`), the ledger parsed again only when its ConfigMap's
resourceVersion moved, and parsed manifests and pod references kept by object identity (survey.py's
memos). Those memos are the only state here; forgetting them changes no decision, only its cost.
`reconcile.Controller` owns one `Observer` and calls `observe` at the start of every round.
"""

from __future__ import annotations

from placer.controller.act.cache import ClusterCache
from placer.controller.config import ControllerConfig
from placer.controller.decide.observe.domains import DomainIndex
from placer.controller.decide.observe.snapshot import planning_snapshot
from placer.controller.decide.observe.state import ClusterState
from placer.controller.decide.observe.survey import ParseMemo, RefMemo, jobset_pods, survey
from placer.controller.decide.observed import Observed
from placer.controller.decide.records.ledger import LEDGER_NAME, Ledger, read_ledger
from placer.controller.report import PhaseTimer
from placer.model.cluster import ClusterSnapshot

__all__ = ["Observer"]


class Observer:
    """Reads the cache into one consistent `Observed` per call (see the module docstring)."""

    def __init__(self, cache: ClusterCache, config: ControllerConfig) -> None:
        self.cache = cache
        self.config = config
        self._snapshot: tuple[int, ClusterSnapshot] | None = None
        self._ledger: tuple[str, Ledger] | None = None
        self._parsed: ParseMemo = {}
        self._refs: RefMemo = {}

    def observe(self, timer: PhaseTimer) -> Observed:
        """One consistent view of the cache, the ledger, the managed JobSets and the planner's
        snapshot, timed as the cycle's observe, survey and snapshot phases."""
        with timer("observe"):
            state = self.cache.state()
            ledger = self._read_ledger(state)
        if len(self._parsed) > 4 * len(state.jobsets) + 100:
            self._parsed.clear()  # forget deleted and superseded manifests
        if len(self._refs) > 2 * len(state.pods) + 100:
            self._refs.clear()  # forget deleted pods and superseded versions
        with timer("survey"):
            pods = jobset_pods(state, self._refs)
            managed = survey(
                state,
                binding=self.config.binding,
                namespaces=self.config.namespaces,
                memo=self._parsed,
                refs=self._refs,
                ledger=ledger,
                pods=pods,
            )
        with timer("snapshot"):
            snapshot = self._planning_snapshot(state)
            index = DomainIndex(snapshot)
        return Observed(
            state=state,
            ledger=ledger,
            managed=tuple(managed),
            snapshot=snapshot,
            index=index,
            pods=pods,
        )

    def _planning_snapshot(self, state: ClusterState) -> ClusterSnapshot:
        """The planner's snapshot, rebuilt only when the cache's snapshot version moved."""
        if self._snapshot is None or self._snapshot[0] != state.snapshot_version:
            snap = planning_snapshot(
                state, binding=self.config.binding, levels=self.config.options.levels
            )
            self._snapshot = (state.snapshot_version, snap)
        return self._snapshot[1]

    def _read_ledger(self, state: ClusterState) -> Ledger:
        """The ledger in the cache, parsed again only when its resourceVersion moved."""
        namespace = self.config.ledger_namespace
        obj = state.configmaps.get((namespace, LEDGER_NAME))
        version = str(((obj or {}).get("metadata") or {}).get("resourceVersion") or "")
        if self._ledger is None or self._ledger[0] != version:
            self._ledger = (version, read_ledger(obj, namespace))
        return self._ledger[1]
