"""`python -m benchmarks.snapshot_decoding SNAPSHOT.json`: why snapshots are decoded as they are.

Each variant runs in a fresh process (so one's memory never hides in another's) and reports its
CPU time, wall time and peak resident set:

- `json.load`, collector on and off: the floor the planner's speed target is measured against;
- `pydantic`: the same fields as pydantic models, validated from the raw bytes in one call
  (`TypeAdapter.validate_json`), the alternative the issue named;
- `msgspec`: placer's decoder (`placer.model.kube.objects.decode_kubectl_list`);
- `load_snapshot`: the whole loader (decoding, quantities, pods summed per node, Node models), as
  is, with the collector running, without computing footprints once per pod signature, and
  without converting each distinct node allocatable once.

Generate a snapshot with `python -m benchmarks.plan_speed` or `benchmarks.worlds.kubectl_export`.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

__all__ = ["VARIANTS", "main"]

VARIANTS = (
    "json.load",
    "json.load+gc",
    "pydantic",
    "msgspec",
    "msgspec+gc",
    "load_snapshot",
    "load_snapshot+gc",
    "load_snapshot-footprint-signatures",
    "load_snapshot-allocatable-sharing",
)
"""`+gc`: the cyclic collector running (the others run with it paused, as the CLI does)."""


def _pydantic_decode(raw: bytes) -> int:
    """The fields placer reads, as pydantic models validated from JSON in one call."""
    from typing import Annotated

    from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictInt, StrictStr, TypeAdapter

    class _M(BaseModel):
        model_config = ConfigDict(extra="ignore", frozen=True)

    class Meta(_M):
        name: StrictStr
        namespace: StrictStr = "default"
        labels: dict[str, StrictStr] = Field(default_factory=dict)

    class Taint(_M):
        key: StrictStr
        value: StrictStr = ""
        effect: Literal["NoSchedule", "PreferNoSchedule", "NoExecute"]

    class Condition(_M):
        type: StrictStr
        status: StrictStr

    class NodeSpec(_M):
        taints: tuple[Taint, ...] = ()
        unschedulable: StrictBool = False

    class NodeStatus(_M):
        allocatable: dict[str, Any] = Field(default_factory=dict)
        conditions: tuple[Condition, ...] = ()

    class NodeObj(_M):
        kind: Literal["Node"]
        metadata: Meta
        spec: NodeSpec = NodeSpec()
        status: NodeStatus = NodeStatus()

    class Container(_M):
        resources: Any = None
        ports: Any = None
        restartPolicy: Any = None

    class PodSpec(_M):
        nodeName: StrictStr | None = None
        containers: list[Container] | None = None
        initContainers: list[Container] | None = None
        overhead: Any = None
        hostNetwork: Any = None
        priority: Any = None
        priorityClassName: Any = None

    class PodStatus(_M):
        phase: StrictStr | None = None

    class PodObj(_M):
        kind: Literal["Pod"]
        metadata: Meta
        spec: PodSpec = PodSpec()
        status: PodStatus = PodStatus()

    class PriorityClassObj(_M):
        kind: Literal["PriorityClass"]
        metadata: Meta
        value: StrictInt

    class KubectlList(_M):
        kind: str
        items: list[Annotated[NodeObj | PodObj | PriorityClassObj, Field(discriminator="kind")]]

    return len(TypeAdapter(KubectlList).validate_json(raw).items)


def _variant(name: str, path: str) -> int:
    """Runs in the child: the variant's work; returns a count to print."""
    import gc

    if not name.endswith("+gc"):
        gc.disable()
    base = name.removesuffix("+gc")
    if base == "json.load":
        with open(path) as f:
            return len(json.load(f)["items"])
    if base == "pydantic":
        return _pydantic_decode(Path(path).read_bytes())
    if base == "msgspec":
        from placer.model.kube.objects import decode_kubectl_list

        items = decode_kubectl_list(Path(path).read_bytes())
        assert items is not None, "not a kubectl List of Nodes, Pods and PriorityClasses"
        return len(items)
    from placer.model.resources import parse_resource_map
    from placer.model.snapshots import load as snapshot
    from placer.model.snapshots import pod_usage
    from placer.model.snapshots.node_drafts import NodeReader

    if base == "load_snapshot-footprint-signatures":
        # on purpose: pod_usage's imported name, which mypy does not see as re-exported, is replaced
        pod_usage.footprint_signature = lambda pod: None  # type: ignore[attr-defined]
    if base == "load_snapshot-allocatable-sharing":

        def every_time(self: Any, n: Any, source: str) -> Any:
            raw, obj = n.status.allocatable, f"Node/{n.metadata.name}"
            found = parse_resource_map(raw, source=source, obj=obj, field="a")
            return found

        NodeReader._read_allocatable = every_time  # type: ignore[method-assign]  # the variant
    return len(snapshot.load_snapshot([path]).nodes)


def _child(name: str, path: str) -> None:
    import resource
    import time

    wall0, cpu0 = time.perf_counter(), time.process_time()
    count = _variant(name, path)
    wall, cpu = time.perf_counter() - wall0, time.process_time() - cpu0
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    out = {"variant": name, "count": count, "cpu_s": cpu, "wall_s": wall, "peak_mb": peak_mb}
    sys.stdout.write(json.dumps(out) + "\n")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.snapshot_decoding", description=__doc__
    )
    parser.add_argument("snapshot")
    parser.add_argument("--variants", default=",".join(VARIANTS))
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        _child(args.child, args.snapshot)
        return 0
    print("| variant | objects | CPU s | wall s | peak RSS MB |")
    print("|---|---|---|---|---|")
    for name in args.variants.split(","):
        proc = subprocess.run(
            [sys.executable, "-m", "benchmarks.snapshot_decoding", args.snapshot, "--child", name],
            capture_output=True,
            text=True,
            check=True,
            cwd=Path(__file__).resolve().parents[1],
        )
        r = json.loads(proc.stdout.strip().splitlines()[-1])
        print(
            f"| {r['variant']} | {r['count']} | {r['cpu_s']:.2f} | {r['wall_s']:.2f} "
            f"| {r['peak_mb']:.0f} |",
            flush=True,
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
