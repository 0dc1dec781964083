"""What the controller decides: pure functions from one observed view to a ledger change and writes.

Nothing here talks to a cluster, sleeps or reads a clock: every function takes the cycle's frozen
inputs (`observe.state.ClusterState`, `observed.Observed`) and returns values, so each decision is
tested on its own and a rerun after a crash decides the same. A folder per phase of the cycle
(reconcile.py), each importing only the ones listed before it:

- `records/`: the ledger, bindings and writes as plain data, and the size bounds they must fit;
- `observe/`: the cluster's state, the survey of managed JobSets, domains, the planner's snapshot,
  what Kueue shows;
- `review/`: which records still hold, the ledger view, releases;
- here: `preempting` (who may be evicted, `--preemption lower-priority`), `observed` (the frozen
  values phases hand on: `Observed`, `Reviewed`, `Announced`), `prepare` (how a manifest opts in);
- `plan/`: the solver's inputs and result, reservations;
- `kueue/`: placer as a Kueue AdmissionCheck (`check`, `eta`, `messages`, `cycle`);
- `round/`: one round put together: `roundreview.judge`, `roundchange.round_change`,
  `roundwrites.round_writes` over `writeplan.plan_writes`.

The code that carries the decisions out is in `placer.controller.act`.
"""
