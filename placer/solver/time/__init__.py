"""Planning over time: when running JobSets end, which waiting JobSets get reservations, backfill.

`release` (when each node and domain frees up), `calendar` (busy periods as bitmasks),
`reservations` (the greedy reservation pass), `holding` (which of its reservations hold their
domains), `schedule/` (the CP-SAT schedule over time, `--schedule cpsat`), `shared/` (JobSets
without an exclusive child Job, node by node), `timeaware` (`TimeAwareSolver`, wrapping any
solver with reservations and backfill), `never` (why a JobSet never fits) and `behind` (when a
JobSet left out of the round could start). This file imports nothing, so the core can take
`release` alone.
"""
