"""A per-`PlacementContext` memo for facts that depend only on the snapshot and a pod shape.

The greedy policies (run twice by the CP-SAT planner for its hint) and the explanations ask the
same questions of the same nodes ("how many pods of this shape fit here?"); on a 10,000-node
fleet answering them once per context instead of once per run is most of their cost. The memo
lives beside the context, not in it, and goes away with it.
"""

from __future__ import annotations

import weakref

from placer.solver.context import PlacementContext

__all__ = ["context_memo"]

_MEMOS: dict[int, dict[object, object]] = {}


def context_memo(ctx: PlacementContext) -> dict[object, object]:
    """A dict private to `ctx`, freed when `ctx` is; callers namespace their keys."""
    found = _MEMOS.get(id(ctx))
    if found is None:
        found = _MEMOS[id(ctx)] = {}
        weakref.finalize(ctx, _MEMOS.pop, id(ctx), None)
    return found
