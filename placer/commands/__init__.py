"""The CLI's subcommands, one module each (`plan`, `explain`, `capacity`, `prepare`, `controller`,
`extender`, `webhook`, `completion`, `defrag`), and what they share, in two folders: `flags/`
(flags several take, and loading the inputs they name) and `output/` (how they print).
`placer.cli` registers them; each turns flags into calls of the layers below and
prints; bad input is one line and exit 2.
"""
