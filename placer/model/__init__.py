"""The data placer works on, and reading it safely: nothing here plans.

Frozen values: `cluster` (the snapshot: nodes, running JobSets, reservations), `workload`
(a JobSet as placement sees it), `plan` (the result, placer's JSON contract), `options` (solver
and time settings), `topology`, `scheduling`, `resources`, `assignment` (the record a JobSet
carries), `durations`, `preemption`, `whatif` (snapshot transforms). Reading input, hostile until
validated, one folder per source: `read` (files, bounded YAML and JSON, limits, names,
manifests), `kube` (the one API client and the one msgspec schema of Kubernetes objects),
`snapshots` (from objects, a compact description or a live cluster), `jobset` (manifests) and
`kueue` (its annotations, Topology and Workload objects). `errors`: every bad input is an
`InputError` naming file, object and field.
"""
