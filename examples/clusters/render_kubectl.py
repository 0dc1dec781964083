"""Regenerate tpu-kubectl.json: the TPU example cluster as `kubectl get nodes,pods -A -o json`.

    python examples/clusters/render_kubectl.py

tests/model/test_examples.py fails when the checked-in file and this rendering drift apart.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent.parent))

from placer.model.snapshots.load import load_snapshot, snapshot_to_kubectl_list  # noqa: E402

SOURCE = HERE / "tpu-v5e-v6e.yaml"
TARGET = HERE / "tpu-kubectl.json"


def render() -> str:
    doc = snapshot_to_kubectl_list(load_snapshot([SOURCE]))
    return json.dumps(doc, indent=2, sort_keys=True) + "\n"


if __name__ == "__main__":
    TARGET.write_text(render(), encoding="utf-8")
