"""CP-SAT planner: aggregate, build, solve lexicographically, materialize (see planner.py)."""
