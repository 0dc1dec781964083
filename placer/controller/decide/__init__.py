"""What the controller decides: pure functions from one observed view to a ledger change and writes.

Nothing here talks to a cluster, sleeps or reads a clock: every function takes the cycle's frozen
inputs (`state.ClusterState`, `observed.Observed`) and returns values, so each decision is tested
on its own and a rerun after a crash decides the same. By phase of the cycle (reconcile.py):
observe: `state`, `survey`, `snapshot`, `domains` (`observed.Observed`); review:
`roundreview.judge` over `review`, `validity` and `ledgerplan.view_ledger` (`observed.Reviewed`);
plan: `planning`, `reserving` (`planning.PlannedRound`); commit: `roundchange.round_change` over
`ledger`, `ledgerplan.ledger_change` and `reserving.reservation_changes`; write:
`roundwrites.round_writes` over `writeplan.plan_writes`, `bindingwrites`, `writes`, `bindings` (and
`prepare`, how a manifest opts in); preemption: `preempting`; the Kueue admission check in
`kueue/`: `workloads` (what Kueue shows), `check` (which Workloads placer serves, and its check on
each), `eta` and `cycle`. The code that carries the decisions out is in `placer.controller.act`.
"""
