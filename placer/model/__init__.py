"""The data placer works on, and reading it safely: nothing here plans.

Frozen values: `cluster` (the snapshot: nodes, running JobSets, reservations), `workload`
(a JobSet as placement sees it), `plan` (the result, placer's JSON contract), `options` (solver
and time settings), `topology`, `scheduling`, `resources`, `assignment` (the record a JobSet
carries). Reading input, hostile until validated: `manifests` and `files` (files and documents),
`kube_objects` and `jobset_objects` (the one msgspec schema of Kubernetes objects), `snapshot`,
`jobset`, `compact` (placer's cluster description), `live` and `kube_client` (a live cluster),
`limits` and `errors` (every bad input is an `InputError` naming file, object and field).
"""
