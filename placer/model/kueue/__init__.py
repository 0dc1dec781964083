"""What Kueue says: TAS pod-template annotations (`annotations`), `Topology` objects as levels
(`topology`), and a Workload's admission and quota (`workload`)."""
