"""Manifests as the API server's JSON decoding reads them: nulls as Go reads them.

Go's `encoding/json` leaves a field at its zero value when the JSON says `null`, and the API server
stores what that decoding gives. Helm renders `tolerations:` with nothing after it as null,
rendered YAML has `labels: {team: }`, and the cluster takes both. placer's typed readers
(msgspec structs for snapshots, the strict JobSet schema) refuse a null where they want a value,
so they read through `as_go_reads` first: the snapshot reader only after its fast conversion
fails, the JobSet parser always (tests/cluster/test_snapshot_rules.py and test_jobset_rules.py
ask the real API server the same questions).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["as_go_reads"]

_STRING_MAPS = frozenset({"labels", "annotations", "nodeSelector", "matchLabels"})
"""Maps whose null values Go reads as the empty string."""


def as_go_reads(value: Any, key: str = "") -> Any:
    """A manifest as the API server's JSON decoding reads it, for the strict schema: a null field
    of an object is the field left out (Go's zero value) and a null in a string map is "". Helm
    renders `tolerations:` with nothing after it as null, and the API server takes it. Only the
    schema reads this copy; quantities are read from the manifest as given, where
    `parse_resource_map` takes a null as zero, and the manifest kept for the writers is left
    alone."""
    if isinstance(value, Mapping):
        if key in _STRING_MAPS:
            return {k: "" if v is None else v for k, v in value.items()}
        return {k: as_go_reads(v, str(k)) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [as_go_reads(v) for v in value]
    return value
