"""Places (domains or nodes, by index) reserved for later starts, as the classifier recounts them.

The classifier counts each place once for an outsider, a JobSet that runs past every reservation
start and holds none, and then recounts, per JobSet, only where its own view differs. For a
reserved place that is where the JobSet holds one of its reservations, or is expected to end by
the latest of them (it may run there as backfill). Both halves of the classifier, domains
(`keys.KeyIndex`) and nodes (`classify_nodes.NodeClassifier`), ask that question; this answers it
with one bisection over the places sorted by their latest start.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable

from placer.model.options import SolveOptions
from placer.model.workload import JobSetRequest
from placer.solver.time.release import expected_duration_s

__all__ = ["Bookings"]


class Bookings:
    """The places a JobSet may see otherwise than an outsider does because of reservations."""

    def __init__(self, places: Iterable[tuple[int, tuple[str, ...], float]]) -> None:
        """`places`: (index, the JobSets reserving it, the latest start among them), for the
        places whose reservations can change a JobSet's view."""
        ordered = sorted((latest, i, reservers) for i, reservers, latest in places)
        self._places: list[int] = [i for _, i, _ in ordered]
        self._latest: list[float] = [latest for latest, _, _ in ordered]
        self._by_jobset: dict[str, list[int]] = {}
        for _, i, reservers in ordered:
            for k in reservers:
                self._by_jobset.setdefault(k, []).append(i)

    def otherwise(self, jobset: JobSetRequest, options: SolveOptions) -> list[int]:
        """The places `jobset` holds a reservation of, or is expected to end by the latest
        start of (the outsider runs past every start): the only ones judged again for it."""
        if not self._places:
            return []
        duration = expected_duration_s(jobset, options.time)
        return [*self.ending_by(duration), *self.of(jobset.key)]

    def ending_by(self, duration_s: float) -> list[int]:
        """The places a JobSet expected to run `duration_s` ends by the latest start of: what
        one holding no reservation may see otherwise than the outsider."""
        return self._places[bisect.bisect_left(self._latest, duration_s) :]

    def of(self, jobset: str) -> list[int]:
        """The places JobSet `jobset` holds a reservation of."""
        return self._by_jobset.get(jobset, [])
