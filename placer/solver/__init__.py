"""The solvers: from a snapshot and a queue of JobSets to a checked `Plan`.

The core, directly in this folder: `interface` (the `Solver` protocol), `registry` (solvers by
name, and the one place a solver is assembled: time-aware when asked, every plan checked),
`context` (facts every solver shares, computed once), `shape_index` (what each node offers each
pod shape), `ledger` (the plan being built), `phases` (the phase timer), `progress` (the
progress hook). Folders, one concern each:

    greedy/    first-fit, best-fit, largest-first, and Kueue TAS BestFit
    cpsat/     the CP-SAT planner and the one model builder
    time/      reservations and backfill over time (`TimeAwareSolver`)
    check/     the independent plan checker, sharing no placement code with the solvers
    reasons/   why a JobSet or a domain is left out, one classifier worded two ways
    explain/   `placer explain`: counts, conflicts, remedies
    capacity/  `placer capacity`: copies that fit, mixes, stranded accelerators, cheapest pools
    preempt/   preemption and defrag: who may be evicted or moved, at what cost, said in the plan

Imports flow model -> solver -> render, commands, controller (tests/test_architecture.py).
"""
