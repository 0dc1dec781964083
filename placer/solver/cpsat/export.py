"""`--export-model PATH`: each stage's model, objective and hint included, for offline reproduction.

The planner solves a sequence of models (one per priority tier, queue order, packing), each with
its own objective and with the optima of the stages before it fixed as constraints. Every one is
written just before it is solved, to PATH with the stage inserted before the extension:

    --export-model out/model.pbtxt  ->  out/model.01-tier-100.pbtxt, out/model.02-tier-0.pbtxt,
                                        out/model.03-queue-order.pbtxt, out/model.04-packing.pbtxt

A name ending in `txt` is written as a text proto, any other as a binary proto (OR-Tools'
convention). Load one with `google.protobuf.text_format.Parse(text, cp_model_pb2.CpModelProto())`
(or `CpModelProto.FromString` for binary) and solve it with the same workers and seed.
The tie-break search after a fully proven solve has no objective and is not written.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from ortools.sat.python import cp_model

from placer.model.errors import InputError

__all__ = ["check_export_path", "export_stage", "stage_path"]


def stage_path(path: str, index: int, stage: str) -> str:
    """`out/model.pbtxt`, 1, `tier 100` -> `out/model.01-tier-100.pbtxt`."""
    p = Path(path)
    slug = re.sub(r"[^A-Za-z0-9-]+", "-", stage).strip("-") or "stage"
    suffix = p.suffix
    stem = p.name[: -len(suffix)] if suffix else p.name
    return str(p.with_name(f"{stem}.{index:02d}-{slug}{suffix}"))


def check_export_path(path: str) -> None:
    """Fail before solving, naming the path, when the stage files cannot be written there."""
    directory = Path(path).parent
    if not directory.is_dir():
        raise InputError(
            "cannot write the CP-SAT model: no such directory",
            source=path,
            field="--export-model",
            code="export-model",
        )
    if not os.access(directory, os.W_OK | os.X_OK):
        raise InputError(
            "cannot write the CP-SAT model: directory not writable",
            source=path,
            field="--export-model",
            code="export-model",
        )


def export_stage(model: cp_model.CpModel, path: str, index: int, stage: str) -> str:
    """Write one stage's model (with its objective and hint); a directory that is not there or
    not writable, or a file that cannot be written, is an error naming it."""
    check_export_path(path)
    target = stage_path(path, index, stage)
    if not model.export_to_file(target):
        raise InputError(
            "cannot write the CP-SAT model", source=target, field="--export-model", code="export"
        )
    return target
