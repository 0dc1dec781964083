"""Cluster snapshots: built from Kubernetes objects (`load`), from a compact description
(`compact`, `compact_running`) or a live cluster (`live`), and rendered back as kubectl lists
them (`kubectl_list`)."""
