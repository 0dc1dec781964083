"""What JobSet's validating webhook refuses that neither the schema nor a name check can say.

JobSet v0.12.0 (`pkg/webhooks/jobset_webhook.go`, `ValidateCreate`) refuses a JobSet whose child
Job names (`<jobset>-<replicatedJob>-<index>`, JobSet's own naming) or, for Indexed Jobs with
completions, pod names (`<job>-<pod index>-` and five random characters) would not be DNS-1035
labels; a group name that is not one; a first replicatedJob with `dependsOn` at all, or a
`dependsOn` naming a replicatedJob not listed before (or as) it; and success or failure policy
targets that name no replicatedJob. placer names child Jobs the same way (ledger keys, `--emit`
files, annotations), so a JobSet the cluster would refuse is refused here, by field, rather than
planned. Rules on what placer never reads (failure policy rule names and reasons, the coordinator,
volume claim policies, in-place restart) are left to the cluster.
"""

from __future__ import annotations

from placer.model.errors import InputError
from placer.model.jobset.objects import JobSetManifest
from placer.model.messages import echo
from placer.model.read.names import dns1035_label_problem
from placer.model.workload import child_job_name

__all__ = ["check_jobset_webhook_rules"]

POD_SUFFIX = "-abcde"
"""The five random characters (and a dash) the Job controller appends to a pod's name."""


def check_jobset_webhook_rules(m: JobSetManifest, *, source: str) -> None:
    """Called after `check_jobset_names`: every name is already well formed on its own."""
    meta = m.metadata
    obj = f"{echo(meta.namespace, quote=False)}/{echo(meta.name, quote=False)}"

    def refuse(message: str, field: str) -> InputError:
        return InputError(message, source=source, obj=obj, field=field, code="jobset")

    listed: set[str] = set()
    for i, rj in enumerate(m.spec.replicatedJobs):
        field = f"spec.replicatedJobs[{i}]"
        listed.add(rj.name)
        problem = dns1035_label_problem(rj.groupName)
        if problem:
            raise refuse(f"group name {echo(rj.groupName)} {problem}", f"{field}.groupName")
        longest_job = child_job_name(m.metadata.name, rj.name, rj.replicas - 1)
        problem = dns1035_label_problem(longest_job)
        if problem:
            raise refuse(
                f"gives child Job name {echo(longest_job)}, which {problem}", f"{field}.name"
            )
        job = rj.template.spec
        if job.completionMode == "Indexed" and job.completions is not None:
            longest_pod = f"{longest_job}-{job.completions - 1}{POD_SUFFIX}"
            problem = dns1035_label_problem(longest_pod)
            if problem:
                raise refuse(
                    f"gives pod name {echo(longest_pod)}, which {problem}", f"{field}.name"
                )
        if rj.dependsOn is not None and i == 0:
            raise refuse("the first replicatedJob cannot depend on another", f"{field}.dependsOn")
        for k, dependency in enumerate(rj.dependsOn or ()):
            if dependency.name not in listed:
                raise refuse(
                    f"{echo(dependency.name)} is not a replicatedJob listed before this one",
                    f"{field}.dependsOn[{k}].name",
                )
    targets = [("spec.successPolicy", m.spec.successPolicy)] if m.spec.successPolicy else []
    if m.spec.failurePolicy:
        targets += [
            (f"spec.failurePolicy.rules[{r}]", rule)
            for r, rule in enumerate(m.spec.failurePolicy.rules)
        ]
    for where, policy in targets:
        for k, name in enumerate(policy.targetReplicatedJobs):
            if name not in listed:
                raise refuse(
                    f"{echo(name)} is not a replicatedJob of this JobSet",
                    f"{where}.targetReplicatedJobs[{k}]",
                )
