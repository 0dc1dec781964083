"""The plan phase: what the solver is given and what it placed (`planning`), and reservations and
running JobSets' timing for time-aware planning (`reserving`)."""
