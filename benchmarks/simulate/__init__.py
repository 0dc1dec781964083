"""Simulations the benchmarks run policies in: time (`overtime`, a discrete-event simulation of
arrivals, runs and failures, with Kueue-like greedy preemption as a baseline) and the rest of a
cluster around the controller (`cluster_sim`: JobSet and Job controllers and a scheduler on a
`MemoryCluster`, also the tests' stand-in for what the real control plane would do).
"""
