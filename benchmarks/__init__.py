"""Benchmarks: `python -m benchmarks` runs the suite; `python -m benchmarks.<name>` one of them
(plan_speed, plan_digests, scaling, kueue_tas, backfill, controller_bench, ...). Scenarios and
fleets are generated (`scenarios`, `fleets`, `queues`), every plan is checked before anything is
recorded (`metrics.checked`), and results with their commands go to RESULTS-*.md.
"""
