"""`placer plan --emit DIR`: the patch files that make a plan happen without the controller.

Pure functions decide what to write (`affinity_patch`, `node_label_patches`, `emit_files`); only
`write_files` (placer/render/emit_dir.py, re-exported here) touches the disk, so every file's
content is tested without I/O, and the one module that writes and deletes holds the rules that
keep it inside DIR.

Layout written under DIR (documented in the README):

    jobs/<namespace>/<child-job>.yaml   strategic-merge patch for one child Job's pod template
    jobs.sh                             `kubectl patch job ...` for each file above
    nodes.yaml                          node-selector strategy only: per node, its label+taint patch
    nodes.sh                            the same as `kubectl label` / `kubectl taint` commands

The child Job patch pins its pods to the planned domain with required node affinity, one `In`
requirement per (key, value) on the domain's path. Kubernetes replaces `nodeSelectorTerms` as a
whole (the list has no merge key), so the patch carries the template's own terms with ours ANDed
into each: (A or B) and D == (A and D) or (B and D). A child Job without an exclusive domain is
pinned to the nodes the plan gave its pods (one term per node, `matchFields metadata.name In
[node]`: the API server allows one node name per node field requirement), so it cannot drift into
a domain reserved for someone else.
"""

from __future__ import annotations

import copy
import logging
import shlex
from collections.abc import Mapping, Sequence
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict

from placer.model.cluster import ClusterSnapshot, Node
from placer.model.errors import InputError
from placer.model.messages import echo
from placer.model.plan import DomainRef, JobPlacement, JobSetOutcome, Plan
from placer.model.read.names import dns1123_label_problem, dns1123_subdomain_problem
from placer.model.scheduling import Taint, term_is_empty
from placer.model.workload import JobSetRequest
from placer.render.emit_dir import OWN_FILES, clear_previous, write_files

__all__ = [
    "NAMESPACED_JOB_LABEL",
    "NO_SCHEDULE_TAINT",
    "OWN_FILES",
    "NodeLabelPatch",
    "affinity_patch",
    "clear_previous",
    "domain_requirements",
    "emit_files",
    "node_label_patches",
    "patch_path",
    "template_node_terms",
    "write_files",
]

log = logging.getLogger(__name__)

NAMESPACED_JOB_LABEL = "alpha.jobset.sigs.k8s.io/namespaced-job"
"""The node label JobSet's node-selector strategy selects on: `<namespace>_<jobName>`."""
NO_SCHEDULE_TAINT = Taint(
    key="alpha.jobset.sigs.k8s.io/no-schedule", value="true", effect="NoSchedule"
)
"""The taint child Jobs of the node-selector strategy tolerate; it keeps everyone else out."""

_MAX_LABEL_VALUE = 63


def _path(domain: DomainRef) -> list[tuple[str, str]]:
    """The domain's (key, value) pairs top-down, ending with its own key even if `path` is empty."""
    pairs = [(str(k), str(v)) for k, v in domain.path]
    if (domain.key, domain.value) not in pairs:
        pairs.append((domain.key, domain.value))
    return pairs


def domain_requirements(domain: DomainRef) -> list[dict[str, Any]]:
    """One `In` requirement per level on the domain's path: label values need not be unique per
    level, so pinning only the last one could land in a same-named domain elsewhere."""
    return [{"key": k, "operator": "In", "values": [v]} for k, v in _path(domain)]


def _job_pins(job: JobPlacement) -> tuple[str, list[list[dict[str, Any]]]]:
    """("matchExpressions" | "matchFields", requirement sets ORed) pinning the job; no sets for
    a job with no pods planned.

    A domain is one set, its path. Nodes are one set each: the API server takes exactly one
    node name per `matchFields` requirement (`In [a, b]` is refused), so "any of these nodes"
    is one term per node."""
    if job.domain is not None:
        return "matchExpressions", [domain_requirements(job.domain)]
    nodes = sorted({p.node for p in job.pods})
    return "matchFields", [
        [{"key": "metadata.name", "operator": "In", "values": [node]}] for node in nodes
    ]


def affinity_patch(
    job: JobPlacement, existing_terms: Sequence[Mapping[str, Any]] = ()
) -> dict[str, Any]:
    """Strategic-merge patch for the child Job pinning its pods; `{}` when nothing was planned.

    `existing_terms` are the pod template's own required nodeSelectorTerms (see
    `template_node_terms`); our requirements are added to each (to a copy of each per node, for a
    job pinned to nodes), or form the only terms. An empty term among them is kept as it is
    (`term_is_empty`).
    """
    field, pins = _job_pins(job)
    if not pins:
        return {}
    terms: list[dict[str, Any]] = []
    for term in existing_terms or [{}]:
        if existing_terms and term_is_empty(term):
            terms.append(copy.deepcopy(dict(term)))
            continue
        for reqs in pins:  # (A or B) and (n1 or n2): every term with every pin
            merged = copy.deepcopy(dict(term))
            current = list(merged.get(field) or [])
            current.extend(r for r in reqs if r not in current)
            merged[field] = current
            terms.append(merged)
    required = {"nodeSelectorTerms": terms}
    return {
        "spec": {
            "template": {
                "spec": {
                    "affinity": {
                        "nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": required}
                    }
                }
            }
        }
    }


def _dig(obj: Any, *keys: str) -> Any:
    for k in keys:
        if not isinstance(obj, Mapping):
            return None
        obj = obj.get(k)
    return obj


def template_node_terms(request: JobSetRequest, replicated_job: str) -> list[dict[str, Any]]:
    """The replicatedJob pod template's required nodeSelectorTerms, from the kept manifest."""
    for rj in _dig(request.manifest, "spec", "replicatedJobs") or []:
        if isinstance(rj, Mapping) and rj.get("name") == replicated_job:
            terms = _dig(
                rj,
                "template",
                "spec",
                "template",
                "spec",
                "affinity",
                "nodeAffinity",
                "requiredDuringSchedulingIgnoredDuringExecution",
                "nodeSelectorTerms",
            )
            return [dict(t) for t in terms or [] if isinstance(t, Mapping)]
    return []


class NodeLabelPatch(BaseModel):
    """What the node-selector strategy needs on one node: the Job's label and the keep-out taint."""

    model_config = ConfigDict(frozen=True)
    node: str
    labels: dict[str, str]
    add_taints: tuple[Taint, ...]
    existing_taints: tuple[Taint, ...] = ()

    def patch(self) -> dict[str, Any]:
        """Strategic-merge patch for the Node. `spec.taints` is replaced as a whole by the API
        server, so the list repeats the node's taints as of the snapshot."""
        taints = [
            *self.existing_taints,
            *(t for t in self.add_taints if t not in self.existing_taints),
        ]
        return {
            "metadata": {"labels": dict(self.labels)},
            "spec": {"taints": [_taint_dict(t) for t in taints]},
        }

    def commands(self) -> list[str]:
        """kubectl commands with the same effect; these add rather than replace, so safer."""
        node = shlex.quote(self.node)
        cmds = [
            f"kubectl label node {node} --overwrite {shlex.quote(f'{k}={v}')}"
            for k, v in sorted(self.labels.items())
        ]
        cmds += [
            f"kubectl taint node {node} --overwrite {shlex.quote(str(t))}" for t in self.add_taints
        ]
        return cmds


def _taint_dict(t: Taint) -> dict[str, str]:
    d = {"key": t.key, "effect": t.effect}
    if t.value:
        d["value"] = t.value
    return d


def _domain_nodes(snapshot: ClusterSnapshot, domain: DomainRef) -> list[Node]:
    pairs = _path(domain)
    return sorted(
        (n for n in snapshot.nodes if all(n.labels.get(k) == v for k, v in pairs)),
        key=lambda n: n.name,
    )


def node_label_patches(outcome: JobSetOutcome, snapshot: ClusterSnapshot) -> list[NodeLabelPatch]:
    """Per node of each planned child Job's domain: label `<namespace>_<jobName>`, taint keep-out.

    The whole domain is labeled, not only the nodes the pods were planned on: the domain belongs
    to the child Job, and the taint must keep every other pod off all of it. Sorted by node name.
    """
    labels: dict[str, str] = {}
    by_node: dict[str, Node] = {}
    for job in outcome.jobs:
        if job.domain is None:
            continue
        value = f"{outcome.namespace}_{job.name}"
        if len(value) > _MAX_LABEL_VALUE:
            log.warning(
                "label value %r is longer than %d characters; Kubernetes will refuse it",
                value,
                _MAX_LABEL_VALUE,
            )
        for node in _domain_nodes(snapshot, job.domain):
            previous = labels.get(node.name)
            if previous is not None and previous != value:
                log.warning(
                    "node %s is in the domains of both %s and %s; keeping %s",
                    node.name,
                    previous,
                    value,
                    previous,
                )
                continue
            labels[node.name] = value
            by_node[node.name] = node
    return [
        NodeLabelPatch(
            node=name,
            labels={NAMESPACED_JOB_LABEL: labels[name]},
            add_taints=(NO_SCHEDULE_TAINT,),
            existing_taints=tuple(by_node[name].taints),
        )
        for name in sorted(labels)
    ]


def _script(lines: Sequence[str]) -> str:
    head = [
        "#!/usr/bin/env bash",
        "# Written by `placer plan --emit`.",
        "set -euo pipefail",
        'cd "$(dirname "$0")"',
    ]
    return "\n".join([*head, *lines]) + "\n"


def patch_path(outcome: JobSetOutcome, job: JobPlacement) -> str:
    """`jobs/<namespace>/<child-job>.yaml`, from names checked here by the API server's rules (a
    namespace is a DNS-1123 label, a Job name a DNS-1123 subdomain), so no name can climb out of
    the directory (`../x`), nest (`a/b`) or hide; the parsers checked them already, this is the
    last guard before they become a path."""
    for what, value, problem in (
        ("namespace", outcome.namespace, dns1123_label_problem(outcome.namespace)),
        ("child Job name", job.name, dns1123_subdomain_problem(job.name)),
    ):
        if problem:
            raise InputError(
                f"cannot name a patch file after the {what} {echo(value)}: it {problem}",
                obj=outcome.key,
                field="--emit",
                code="emit",
            )
    return f"jobs/{outcome.namespace}/{job.name}.yaml"


def emit_files(
    plan: Plan, jobsets: Sequence[JobSetRequest], snapshot: ClusterSnapshot
) -> dict[str, str]:
    """Relative path -> file content for every placed child Job (and node-selector nodes)."""
    requests = {js.key: js for js in jobsets}
    files: dict[str, str] = {}
    job_cmds: list[str] = []
    node_patches: list[NodeLabelPatch] = []
    for outcome in plan.jobsets:
        if outcome.status == "unschedulable":
            continue
        request = requests.get(outcome.key)
        for job in outcome.jobs:
            existing = template_node_terms(request, job.replicated_job) if request else []
            patch = affinity_patch(job, existing)
            if not patch:
                continue
            rel = patch_path(outcome, job)
            cmd = (
                f"kubectl patch job {shlex.quote(job.name)} -n {shlex.quote(outcome.namespace)}"
                f" --type strategic --patch-file {shlex.quote(rel)}"
            )
            files[rel] = f"# {outcome.key} child Job {job.name}\n# {cmd}\n" + _dump(patch)
            job_cmds.append(cmd)
        if request is not None and request.node_selector_strategy:
            node_patches.extend(node_label_patches(outcome, snapshot))
    if job_cmds:
        files["jobs.sh"] = _script(job_cmds)
    if node_patches:
        node_patches.sort(key=lambda p: p.node)
        files["nodes.yaml"] = _dump([{"node": p.node, "patch": p.patch()} for p in node_patches])
        files["nodes.sh"] = _script([c for p in node_patches for c in p.commands()])
    return files


class _NoAliasDumper(yaml.SafeDumper):
    """Repeated values (one template's terms shared by several patches) written out in full:
    a patch file is read by people and by `kubectl patch`, and `&id001`/`*id001` help neither."""

    def ignore_aliases(self, data: object) -> bool:
        return True


def _dump(data: object) -> str:
    return yaml.dump(data, Dumper=_NoAliasDumper, sort_keys=False)
