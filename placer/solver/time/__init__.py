"""Planning over time: when running JobSets end, which waiting JobSets get reservations, backfill.

`release` (when each node and domain frees up), `calendar` (busy periods as bitmasks),
`reservations` (the greedy reservation pass), the CP-SAT schedule over time (`schedule_problem`:
classes of domains; `schedule_model`: the rules; `wait_cost`: what a planned wait costs;
`schedule`: hint, solve, materialize, with the greedy pass as hint and fallback; `--schedule
cpsat`; `starving`: who may start no later than the greedy pass would; `holding`: which of its
reservations hold their domains), `timeaware` (`TimeAwareSolver`, wrapping any solver with
reservations and backfill) and `behind` (when a JobSet left out of the round could start).
This file imports nothing, so the core can take `release` alone.
"""
