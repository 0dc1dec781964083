"""The observe phase: one consistent view of the cluster (`state`), the JobSets placer manages and
what their records say (`survey`), the domains already given away (`domains`), the planner's
snapshot (`snapshot`), whether a record still fits where it points (`validity`), and what Kueue
shows (`kueue`, with `--kueue-admission-check`)."""
