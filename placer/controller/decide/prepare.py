"""Opting a JobSet manifest in to placer: what `placer prepare` adds, as a pure function.

- gate binding: the `placer.dev/placement` scheduling gate on every replicatedJob's pod template,
  so every pod (of every restart) is created gated and waits for the controller.
- node-labels binding: the JobSet's `alpha.jobset.sigs.k8s.io/exclusive-topology` (kept if the
  JobSet or a replicatedJob already names one, else the key given) and the node-selector strategy
  annotation (also on each replicatedJob template that names its own key, where JobSet reads
  it), so JobSet selects the nodes the controller labels per child Job; a replicated job JobSet
  would give no node selector (one without an exclusive key) is refused: it needs the gate.

Idempotent: preparing a prepared manifest changes nothing. Everything else is kept as written.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from placer.controller.decide.observe.survey import Binding
from placer.controller.decide.records.bindings import node_selector_problem
from placer.model.assignment import PLACEMENT_GATE
from placer.model.errors import InputError
from placer.model.read.manifests import object_key
from placer.model.workload import EXCLUSIVE_TOPOLOGY, NODE_SELECTOR_STRATEGY

__all__ = ["prepare_jobset"]


def _rjobs(obj: dict[str, Any], source: str) -> list[dict[str, Any]]:
    rjobs = (obj.get("spec") or {}).get("replicatedJobs")
    if not isinstance(rjobs, list) or not rjobs:
        raise InputError(
            "a JobSet needs spec.replicatedJobs",
            source=source,
            obj=object_key(obj),
            field="spec.replicatedJobs",
            code="jobset",
        )
    return rjobs


def prepare_jobset(
    obj: Mapping[str, Any], binding: Binding, *, exclusive_key: str | None = None, source: str = ""
) -> dict[str, Any]:
    """A copy of the JobSet manifest opted in to placer under `binding`."""
    result = copy.deepcopy(dict(obj))
    rjobs = _rjobs(result, source)
    if binding == "gate":
        for i, rj in enumerate(rjobs):
            try:
                pod_spec = rj["template"]["spec"]["template"]["spec"]
            except (KeyError, TypeError) as e:
                raise InputError(
                    "missing pod template",
                    source=source,
                    obj=object_key(obj),
                    field=f"spec.replicatedJobs[{i}].template.spec.template.spec",
                    code="jobset",
                ) from e
            where = f"spec.replicatedJobs[{i}].template.spec.template.spec"
            if not isinstance(pod_spec, dict):
                raise InputError(
                    "must be an object", source=source, obj=object_key(obj), field=where
                )
            gates = pod_spec.get("schedulingGates") or []
            if not isinstance(gates, list) or not all(isinstance(g, Mapping) for g in gates):
                raise InputError(
                    "must be a list of gates, each an object with a name",
                    source=source,
                    obj=object_key(obj),
                    field=f"{where}.schedulingGates",
                    code="jobset",
                )
            pod_spec["schedulingGates"] = gates
            if not any(isinstance(g, Mapping) and g.get("name") == PLACEMENT_GATE for g in gates):
                gates.append({"name": PLACEMENT_GATE})
        return result
    meta = result.setdefault("metadata", {})
    annotations = meta.setdefault("annotations", {}) or {}
    meta["annotations"] = annotations
    has_key = EXCLUSIVE_TOPOLOGY in annotations or any(
        EXCLUSIVE_TOPOLOGY
        in (((rj.get("template") or {}).get("metadata") or {}).get("annotations") or {})
        for rj in rjobs
    )
    if not has_key:
        if not exclusive_key:
            raise InputError(
                f"the node-labels binding needs an {EXCLUSIVE_TOPOLOGY} annotation;"
                " give the node label key with --exclusive-topology",
                source=source,
                obj=object_key(obj),
                code="usage",
            )
        annotations[EXCLUSIVE_TOPOLOGY] = exclusive_key
    annotations.setdefault(NODE_SELECTOR_STRATEGY, "true")
    for rj in rjobs:
        template = rj.get("template")
        meta = template.get("metadata") if isinstance(template, dict) else None
        own = meta.get("annotations") if isinstance(meta, dict) else None
        if isinstance(own, dict) and EXCLUSIVE_TOPOLOGY in own:
            own.setdefault(NODE_SELECTOR_STRATEGY, "true")  # JobSet reads the flag beside the key
    if problem := node_selector_problem(result):
        raise InputError(problem, source=source, obj=object_key(obj), code="usage")
    return result
