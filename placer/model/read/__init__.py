"""Reading input safely: the one way a path is opened (`files`), text parsed within bounds
(`loading`, `limits`), names checked by the API server's rules (`names`), and manifest files
gathered (`manifests`). Everything else in `placer.model` reads through here."""
