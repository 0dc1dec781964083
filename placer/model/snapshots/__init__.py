"""Cluster snapshots: built from Kubernetes objects (`load`, its Node objects read by
`node_drafts`), from a compact description (`compact`, `compact_running`) or a live cluster
(`live`), with what is known of running JobSets (`running`), and rendered back as kubectl lists
(`kubectl_list`)."""
