"""`placer webhook`: a mutating admission webhook that gates the pods of opted-in JobSets.

It adds placer's scheduling gate (`placer.dev/placement`) to every pod of a JobSet in a namespace
labeled `placer.dev/managed: "true"`, so `placer controller --binding gate` places the JobSet
without its manifest being rewritten by `placer prepare`. admission.py decides (pure), tls.py keeps
the serving certificate current, server.py serves both on aiohttp. deploy/webhook/ installs it.
"""

from __future__ import annotations

from plugins.webhook.admission import MANAGED_LABEL, Answer, MalformedReview, answer_review, decide
from plugins.webhook.server import MUTATE_PATH, WebhookOptions, WebhookServer, serve

__all__ = [
    "MANAGED_LABEL",
    "MUTATE_PATH",
    "Answer",
    "MalformedReview",
    "WebhookOptions",
    "WebhookServer",
    "answer_review",
    "decide",
    "serve",
]
