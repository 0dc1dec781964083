"""JobSet manifests: parsed into `JobSetRequest` (`parse`), their name fields checked (`names`),
their pod templates read (`objects`), and the pending ones of a live cluster (`live_queue`)."""
