"""What-if flags shared by `placer explain` and `placer capacity`: --drain, --add-pool, --remove.

All three append to one list in command-line order, so `--remove a --drain b` means exactly that
sequence; `apply_whatif_args` then applies them through the pure transforms in
`placer.model.whatif`. `--remove` names a running JobSet (it finishes: its nodes are freed) or a
pending one among the JobSets given (it leaves the queue).
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Sequence

from placer.model.cluster import ClusterSnapshot
from placer.model.errors import InputError
from placer.model.whatif import WhatIf, add_pools_from, drain, remove_jobset, running_jobsets
from placer.model.workload import JobSetRequest

__all__ = ["add_whatif_args", "apply_whatif_args"]


def _tagged(kind: str) -> Callable[[str], WhatIf]:
    def parse(text: str) -> WhatIf:
        if not text.strip():
            raise argparse.ArgumentTypeError("must not be empty")
        return (kind, text.strip())

    return parse


def add_whatif_args(parser: argparse.ArgumentParser) -> None:
    """Sets `args.whatifs`: [(kind, argument), ...] in the order given."""
    group = parser.add_argument_group("what-if (applied in the order given)")
    group.add_argument(
        "--drain",
        metavar="NODE|KEY=VALUE",
        dest="whatifs",
        action="append",
        type=_tagged("drain"),
        help="remove a node, or every node with a label (a whole domain); repeatable",
    )
    group.add_argument(
        "--add-pool",
        metavar="FILE",
        dest="whatifs",
        action="append",
        type=_tagged("add-pool"),
        help="add the node pools of a compact cluster description (kind: ClusterDescription)",
    )
    group.add_argument(
        "--remove",
        metavar="NAMESPACE/NAME",
        dest="whatifs",
        action="append",
        type=_tagged("remove"),
        help="a running JobSet finishes (its pods' resources and domains are freed), or a "
        "pending one leaves the queue; repeatable",
    )


def apply_whatif_args(
    args: argparse.Namespace, snapshot: ClusterSnapshot, jobsets: Sequence[JobSetRequest]
) -> tuple[ClusterSnapshot, list[JobSetRequest], list[str]]:
    """The snapshot and queue after every what-if, and one note per what-if."""
    queue = list(jobsets)
    notes: list[str] = []
    for kind, arg in getattr(args, "whatifs", None) or []:
        if kind == "drain":
            snapshot, note = drain(snapshot, arg)
        elif kind == "add-pool":
            snapshot, note = add_pools_from(snapshot, arg)
        elif arg in running_jobsets(snapshot):
            snapshot, note = remove_jobset(snapshot, arg)
        elif any(js.key == arg for js in queue):
            queue = [js for js in queue if js.key != arg]
            note = f"removed pending JobSet {arg} from the queue"
        else:
            raise InputError(
                "neither running on the cluster nor among the JobSets given",
                obj=arg,
                field="--remove",
                code="unknown-jobset",
            )
        notes.append(note)
    return snapshot, queue, notes
