"""What the controller does to a cluster: adapters, the watch cache, commits, writes, leadership.

`kube_adapter` (the official client; the only controller module importing `kubernetes`) and
`memory_adapter` (an in-memory API server, with `selectors` for its label and patch rules)
implement the `placer.controller.adapter.ClusterAdapter` seam; `cache` keeps the watched objects
and hands the deciding code one `ClusterState`; `commit` sends ledger commits, `executor` the
decided writes, both with one retry policy; `lease` and `leader` run leader election. What to do is
decided in `placer.controller.decide`; this folder only carries it out.
"""
