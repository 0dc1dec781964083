"""The machine-readable plan: `placer plan --format json|yaml`.

The document is exactly `Plan.model_dump(mode="json")`, the contract other tools read (the
extender's `--plan`, capacity tools, benchmarks), so there is no second schema to keep in step.
YAML carries the same data for people who prefer it.
"""

from __future__ import annotations

import json
from typing import Any

import yaml

from placer.model.plan import Plan

__all__ = ["plan_document", "render_json", "render_yaml"]


def plan_document(plan: Plan) -> dict[str, Any]:
    """The JSON-compatible dict of the plan (key order as the models declare it)."""
    return plan.model_dump(mode="json")


def render_json(plan: Plan) -> str:
    return json.dumps(plan_document(plan), indent=2) + "\n"


def render_yaml(plan: Plan) -> str:
    return yaml.safe_dump(plan_document(plan), sort_keys=False, default_flow_style=False)
