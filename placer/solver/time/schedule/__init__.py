"""The CP-SAT schedule over time (`--schedule cpsat`): every waiting JobSet's start and domains
from one model, the greedy pass as its hint and fallback.

`problem` (classes of domains, capacity over time, the start grid), `model` (the rules and the
objective), `wait_cost` (what a planned wait costs, aged over the horizon), `starving` (who may
start no later than the greedy pass would) and `solve` (hint, search, materialize). Imports
nothing, so a caller takes only the module it needs.
"""
