"""The machine-readable plan: `placer plan --format json|yaml`.

The document is exactly `Plan.model_dump(mode="json")`, the contract other tools read (the
extender's `--plan`, capacity tools, benchmarks), so there is no second schema to keep in step.
YAML carries the same data for people who prefer it.
"""

from __future__ import annotations

from typing import Any

import yaml

from placer.model.plan import Plan

__all__ = ["plan_document", "render_json", "render_yaml"]


def plan_document(plan: Plan) -> dict[str, Any]:
    """The JSON-compatible dict of the plan (key order as the models declare it)."""
    return plan.model_dump(mode="json")


def render_json(plan: Plan) -> str:
    """`plan_document` as indented JSON, serialized by pydantic-core: `json.dumps` with an indent
    runs in pure Python, 0.2 s against 0.02 s for the 36,000 pods of the 50,000-node benchmark
    plan (benchmarks/RESULTS-speed.md), same text there (non-ASCII stays UTF-8, not escaped)."""
    return plan.model_dump_json(indent=2) + "\n"


def render_yaml(plan: Plan) -> str:
    return yaml.safe_dump(plan_document(plan), sort_keys=False, default_flow_style=False)
