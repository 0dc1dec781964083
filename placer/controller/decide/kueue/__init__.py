"""placer as a Kueue AdmissionCheck: which Workloads placer serves and its check on each
(`check`), what the check says (`messages`), when a Workload still waiting for quota would start
(`eta`), and what one cycle does with Kueue (`cycle`). What Kueue shows is read in `observe.kueue`.
"""
