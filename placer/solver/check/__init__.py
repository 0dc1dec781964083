"""The independent plan checker: every plan is judged here against the snapshot, sharing no
placement code with the solvers. `checker.check` runs the placement rules, `checker_time` the rules
for reservations and backfill. This file imports nothing.
"""
