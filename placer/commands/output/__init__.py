"""How the subcommands print: `reports` (`-o`, the line width, progress for the commands that
print reports), `logs` (bounded, printable log lines for every command) and `server_logs`
(the log format of the long-running servers).
"""
