"""Planning over time: when running JobSets end, which waiting JobSets get reservations, backfill.

`release` (when each node and domain frees up), `calendar` (busy periods as bitmasks),
`reservations` (the reservation pass) and `timeaware` (`TimeAwareSolver`, wrapping any solver with
reservations and backfill). This file imports nothing, so the core can take `release` alone.
"""
