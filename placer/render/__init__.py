"""Turning a Plan into what people and tools read: a table, the JSON/YAML contract, patch files.

A layer above the solvers: it reads `Plan` and `JobSetRequest` (placer.model) and nothing else, so
the CLI, the benchmarks and the controller's dry-run all print the same thing.
"""

from __future__ import annotations

from placer.render.document import plan_document, render_json, render_yaml
from placer.render.emit import affinity_patch, emit_files, node_label_patches, write_files
from placer.render.table import render_table

__all__ = [
    "affinity_patch",
    "emit_files",
    "node_label_patches",
    "plan_document",
    "render_json",
    "render_table",
    "render_yaml",
    "write_files",
]
