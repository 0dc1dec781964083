"""Flags several subcommands share, and reading what they name: `planning` (the cluster, the
queue and the solver, loading inputs, `run_solver`), `timing` (time-aware planning),
`preemption`, `whatif`, `map` (`--map`), and `argtypes` (the checked argument types every flag
uses). A subcommand's own flags stay in its module.
"""
