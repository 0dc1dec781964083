"""What the controller decides: pure functions from one observed view to a ledger change and writes.

Nothing here talks to a cluster, sleeps or reads a clock: every function takes the cycle's frozen
inputs (`state.ClusterState`, `observed.Observed`) and returns values, so each decision is tested
on its own and a rerun after a crash decides the same. `survey`, `snapshot` read the view;
`decisions` and `reserving` plan; `ledger`, `ledgerplan` say what the placement ledger holds and
what to commit; `writeplan`, `writes`, `bindings` say what to write (and `prepare` how a manifest
opts in). The code that carries the decisions out is in `placer.controller.act`.
"""
