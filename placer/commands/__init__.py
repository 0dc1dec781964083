"""The CLI's subcommands, one module each (`plan`, `explain`, `capacity`, `prepare`, `controller`,
`extender`, `webhook`, `completion`), and what they share: `common` (loading inputs, the solver
flags, `run_solver`), `timing` (time-aware flags), `whatif`, `map_option`, `output`,
`argtypes`. `placer.cli` registers them; each turns flags into calls of the layers below and
prints; bad input is one line and exit 2.
"""
