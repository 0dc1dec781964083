"""placer as a Kueue AdmissionCheck: what Kueue shows (`workloads`), which Workloads placer serves
and its check on each (`check`), and when a Workload still waiting for quota would start
(`eta`)."""
