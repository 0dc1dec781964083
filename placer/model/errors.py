"""The one error tree of placer, so callers catch what they mean and the CLI can print one line.

    PlacerError                  root: everything placer raises on purpose
    +-- InputError (ValueError)  a manifest, snapshot or option is wrong; names file, object, field
    +-- ClusterError             the Kubernetes API failed or refused (converted at the boundary,
        |                        placer.model.kube.client)
        +-- ResourceExpired      410 Gone: a watch's resourceVersion or a list's continue token
                                 is older than the server keeps; relist, do not back off

An unschedulable JobSet is never an error: it is a plan outcome with a reason.
"""

from __future__ import annotations

from placer.model.messages import clip, printable

__all__ = ["ClusterError", "InputError", "PlacerError", "ResourceExpired"]


class PlacerError(Exception):
    """Root of every error placer raises deliberately; carries a stable machine-readable code."""

    code: str = "placer"


class InputError(PlacerError, ValueError):
    """Bad input. The message names where it is, so a user can fix it without a traceback."""

    code = "input"

    def __init__(
        self,
        message: str,
        *,
        source: str = "",
        obj: str = "",
        field: str = "",
        code: str = "input",
    ) -> None:
        self.source = source
        self.obj = obj
        self.field = field
        self.code = code
        self.message = message
        super().__init__(self.describe())

    def describe(self) -> str:
        """`file: object: field: message`, one printable line of bounded length, whatever the
        parts hold (they come from input)."""
        where = [part for part in (self.source, self.obj, self.field) if part]
        text = f"{': '.join(where)}: {self.message}" if where else self.message
        return clip(printable(text))


class ClusterError(PlacerError):
    """The cluster could not be read or written; temporary ones are retried by the controller."""

    code = "cluster"

    def __init__(self, message: str, *, status: int | None = None, temporary: bool = False) -> None:
        self.status = status
        self.temporary = temporary
        super().__init__(message)


class ResourceExpired(ClusterError):
    """410 Gone: what was asked for is older than the API server keeps (etcd compacted it).

    Not a failure to back off from: the caller lists again and watches from the new list."""

    code = "expired"

    def __init__(self, message: str) -> None:
        super().__init__(message, status=410)
