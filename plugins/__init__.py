"""Components that run beside Kubernetes' own: `extender` (a kube-scheduler extender that keeps
pods on the domains the plan gave them) and `webhook` (a mutating admission webhook that gates
the pods of opted-in JobSets). They use placer's model and solver layers, never the CLI.
"""
