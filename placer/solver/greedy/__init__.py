"""Greedy placement: the baselines (first-fit, best-fit, largest-first) and Kueue TAS BestFit.

`baselines` holds the three greedy solvers (the CP-SAT planner's hint is one of them); `tas_search`
is Kueue's BestFit over the domain tree, pure (one run's phases in `tas_phases`); `tas` turns its
answer into child Job placements; `group_room` is the podset-group room rule, plain arithmetic the
explanations share. This file imports nothing, so a caller can take one module without the others.
"""
