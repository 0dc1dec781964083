"""`placer prepare JOBSET.yaml`: print the manifest opted in to placer, ready for `kubectl apply`.

Every JobSet in the input gets the scheduling gate (gate binding) or the exclusive-topology and
node-selector annotations (node-labels binding); other documents pass through unchanged. Output is
multi-document YAML on stdout, in input order.
"""

from __future__ import annotations

import argparse
import sys

import yaml

from placer.commands.flags.argtypes import label_key
from placer.model.errors import InputError

__all__ = ["register", "run"]


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = sub.add_parser(
        "prepare",
        help="opt JobSet manifests in to the placer controller",
        description="Print the manifests with the placer.dev/placement scheduling gate added to "
        "every replicatedJob's pod template (gate binding), or with the exclusive-topology and "
        "node-selector annotations (node-labels binding).",
    )
    parser.add_argument(
        "jobsets", metavar="JOBSET", nargs="+", help="JobSet manifest files or directories"
    )
    parser.add_argument(
        "--binding",
        choices=("gate", "node-labels"),
        default="gate",
        help="gate (default) or node-labels",
    )
    parser.add_argument(
        "--exclusive-topology",
        metavar="KEY",
        type=label_key,
        help="node-labels binding: the node label key of the domains, for "
        "JobSets that do not name one",
    )
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from pathlib import Path

    # the controller package loads the time-aware pass (networkx): not for every command's start
    from placer.controller.decide.prepare import prepare_jobset
    from placer.model.jobset.parse import validate_jobset
    from placer.model.read.manifests import read_documents

    for p in args.jobsets:
        if not Path(p).exists():
            raise InputError("no such file or directory", source=p, code="missing-file")
    docs = []
    for source, doc in read_documents(args.jobsets):
        if doc.get("kind") == "JobSet":
            validate_jobset(doc, source=source)  # what the controller would refuse, refused now
            doc = prepare_jobset(
                doc, args.binding, exclusive_key=args.exclusive_topology, source=source
            )
        docs.append(dict(doc))
    if not any(d.get("kind") == "JobSet" for d in docs):
        raise InputError("contains no JobSet", source=", ".join(args.jobsets), code="no-jobset")
    sys.stdout.write(yaml.safe_dump_all(docs, sort_keys=False))
    return 0
