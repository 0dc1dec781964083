"""Kubernetes objects as placer reads them: the one client boundary (`client`), typed Node,
Pod and PriorityClass structs (`objects`), and which child Job a live pod belongs to (`pods`)."""
