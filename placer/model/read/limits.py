"""Hard limits on input, in one place: how deep, how many, how large placer accepts.

Hostile or mistaken input must end in a one-line `InputError` (exit 2, or a 4xx from a server)
within seconds, never in a `RecursionError`, a `MemoryError` after half a minute, or a model the
solver rejects. Each limit is checked where the value is first read, before anything is allocated
from it; the numbers are far above any real cluster or workload and are documented in the README
("Input limits").

Who calls what: `placer.model.read.loading` (every YAML and JSON document) applies the nesting,
alias and number limits, `placer.model.read.files` (every input file) the size limit; parsers of
objects built in memory (watch caches, request bodies) call `check_nesting_depth`; the JobSet parser
and loader call `check_pods_per_jobset` and `check_pods_per_plan`; the compact cluster description
and the node-pool catalog use the node counts; `Int32`/`Int64`-style bounds are plain constants for
pydantic fields and CLI options.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import Field, StrictInt

from placer.model.errors import InputError

__all__ = [
    "INT32_MAX",
    "MAX_ALIAS_NODES",
    "MAX_CATALOG_NODES",
    "MAX_DESCRIPTION_NODES",
    "MAX_NESTING_DEPTH",
    "MAX_NUMBER_CHARS",
    "MAX_PODS_PER_JOBSET",
    "MAX_PODS_PER_PLAN",
    "MAX_POOL_HOSTS",
    "MAX_PRICE_PER_HOUR",
    "MAX_WORKERS",
    "SEED_MAX",
    "Int32",
    "Int64",
    "Port",
    "check_nesting_depth",
    "check_pods_per_jobset",
    "check_pods_per_plan",
    "nesting_depth",
]

INT32_MAX = 2**31 - 1
"""Kubernetes' int32 fields (replicas, parallelism, completions, priority) stop here."""
SEED_MAX = 2**31 - 1
"""CP-SAT's `random_seed` is an int32; seeds are 0..SEED_MAX."""
MAX_NESTING_DEPTH = 100
"""Objects and arrays inside each other. A JobSet nests about 20 deep (affinity terms in a pod
template in a Job template), so this only stops input built to crash the parser."""
MAX_ALIAS_NODES = 100_000
"""Nodes YAML aliases may add to one file beyond those written out (`*a` counts as the whole node
`&a` names): anchors shared by a few replicated jobs add hundreds; an alias bomb adds millions."""
MAX_NUMBER_CHARS = 100
"""Characters of one number in YAML or JSON: an int64 has 19 digits, a float's repr at most 24."""
MAX_PODS_PER_JOBSET = 100_000
"""Pods one JobSet may ask for at once (sum of replicas x pods per child Job)."""
MAX_PODS_PER_PLAN = 1_000_000
"""Pods of all JobSets of one plan together: each becomes a placement row in the plan."""
MAX_POOL_HOSTS = 4096
"""Hosts in one pool (a multi-host TPU slice has at most a few thousand): a pool is expanded whole
to be looked at, so its size bounds the time of every step that does."""
MAX_DESCRIPTION_NODES = 100_000
"""Nodes a compact cluster description may expand to (twice the largest benchmark)."""
MAX_CATALOG_NODES = 100_000
"""Nodes a node-pool catalog may offer (maxCount x hosts summed over pool types)."""
MAX_WORKERS = 256
"""CP-SAT search workers (`--workers`): each is a thread; CP-SAT itself rejects a model's
parameters somewhere past 10,000 (MODEL_INVALID), and no machine runs more than a few hundred."""
MAX_PRICE_PER_HOUR = 1_000_000.0
"""Catalog prices stay finite and small enough to scale into CP-SAT's 64-bit objective."""


Int32 = Annotated[StrictInt, Field(ge=-INT32_MAX - 1, le=INT32_MAX)]
"""An integer field Kubernetes declares int32 (priorities, PriorityClass values)."""
Int64 = Annotated[StrictInt, Field(ge=-(2**63), le=2**63 - 1)]
"""An integer that is written out as text somewhere (a label value, a quantity)."""
Port = Annotated[StrictInt, Field(ge=1, le=65535)]


def nesting_depth(obj: Any, limit: int | None = None) -> int:
    """How deep dicts and lists nest in `obj` (a scalar is 0, `{}` and `[]` are 1). Iterative,
    so any depth is measured without recursion; stops early once `limit` is exceeded. Shared
    subtrees (YAML aliases) are visited once."""
    deepest = 0
    stack: list[tuple[Any, int]] = [(obj, 1)]
    seen: set[int] = set()
    while stack:
        value, depth = stack.pop()
        if isinstance(value, dict):
            children: Any = value.values()
        elif isinstance(value, list | tuple):
            children = value
        else:
            continue
        if id(value) in seen:
            continue
        seen.add(id(value))
        deepest = max(deepest, depth)
        if limit is not None and deepest > limit:
            return deepest
        stack.extend((child, depth + 1) for child in children if isinstance(child, dict | list))
    return deepest


def check_nesting_depth(
    obj: Any, source: str, *, obj_name: str = "", limit: int = MAX_NESTING_DEPTH
) -> None:
    """Raise the one-line InputError if `obj` nests deeper than `limit`."""
    if nesting_depth(obj, limit) > limit:
        raise InputError(
            f"nested deeper than {limit} levels", source=source, obj=obj_name, code="nesting"
        )


def check_pods_per_jobset(pods: int, *, source: str, obj: str, field: str) -> None:
    if pods > MAX_PODS_PER_JOBSET:
        raise InputError(
            f"asks for {pods} pods; at most {MAX_PODS_PER_JOBSET} per JobSet",
            source=source,
            obj=obj,
            field=field,
            code="too-many-pods",
        )


def check_pods_per_plan(pods: int, *, source: str, obj: str = "") -> None:
    if pods > MAX_PODS_PER_PLAN:
        raise InputError(
            f"the JobSets ask for {pods} pods together; at most {MAX_PODS_PER_PLAN} per plan",
            source=source,
            obj=obj,
            code="too-many-pods",
        )
