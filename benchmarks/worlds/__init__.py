"""What a benchmark run is made of: generated clusters, their background load, queues drawn from
the Philly trace, named scenarios and the over-time worlds, and a scenario written as kubectl
JSON. Imports nothing else of `benchmarks`: the entry points and the simulations build on it.
"""
