"""JobSets without an exclusive child Job over time, node by node: their pods share nodes, so
no domain is reserved for them and their starts are found on each node's timeline.

`timeline` (what each node holds, and when it frees), `starts` (when each such JobSet could
start, behind the plan and the reservations) and `room` (whether one starts now, judged node by
node in the reservation pass's queue order). Imports nothing.
"""
