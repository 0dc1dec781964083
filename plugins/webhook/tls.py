"""The webhook's server certificate: loaded from files, reloaded when cert-manager renews them.

cert-manager rewrites the mounted Secret before the certificate expires; the kubelet swaps the
files in place. `ServingCertificate.reload_if_changed` loads the new pair into a fresh
`ssl.SSLContext` and, only once it loaded whole, hands it to new connections (the server's context
switches each handshake to the newest one in its server-name callback); open connections keep the
old one. A pair that does not load (half written, garbage, a FIFO or a device in a file's place)
leaves the previous certificate in service and is logged; the server calls the reload from a
worker thread, so even a file system that hangs cannot stop it answering.
"""

from __future__ import annotations

import logging
import ssl
from pathlib import Path

from placer.model.errors import InputError
from placer.serving import server_ssl_context

__all__ = ["ServingCertificate"]

log = logging.getLogger(__name__)


class ServingCertificate:
    """An `ssl.SSLContext` serving the certificate and key at `cert_file` / `key_file`."""

    def __init__(self, cert_file: Path, key_file: Path) -> None:
        self.cert_file = cert_file
        self.key_file = key_file
        self._stamp = self._files_stamp()
        self.context = self._load()
        """The context to serve with; each handshake moves to `self._current`."""
        self._current = self.context
        self.context.sni_callback = self._switch

    def _switch(self, conn: ssl.SSLObject | ssl.SSLSocket, _name: str | None, _: object) -> None:
        if self._current is not self.context:
            conn.context = self._current

    def _files_stamp(self) -> tuple[float, float, int, int]:
        try:
            cert, key = self.cert_file.stat(), self.key_file.stat()
        except OSError as e:
            raise InputError(
                f"cannot read {e.filename}: {e.strerror}",
                field=(
                    "--tls-cert-file"
                    if e.filename == str(self.cert_file)
                    else "--tls-private-key-file"
                ),
                code="usage",
            ) from None
        return (cert.st_mtime, key.st_mtime, cert.st_size, key.st_size)

    def _load(self) -> ssl.SSLContext:
        """A fresh context from the files (checked regular files first: a FIFO in a
        certificate's place is refused, never waited on)."""
        return server_ssl_context(
            self.cert_file,
            self.key_file,
            cert_field="--tls-cert-file",
            key_field="--tls-private-key-file",
        )

    def reload_if_changed(self) -> bool:
        """Load the files again if they changed since the last load; True when reloaded.

        A half-written or mismatched pair (cert-manager writes both files, one after the other)
        keeps the previous certificate in service and is retried at the next call.
        """
        try:
            stamp = self._files_stamp()
        except InputError as e:
            log.warning("TLS files unreadable, keeping the current certificate: %s", e)
            return False
        if stamp == self._stamp:
            return False
        try:
            self._current = self._load()
        except InputError as e:
            log.warning("TLS files changed but do not load, keeping the current one: %s", e)
            return False
        self._stamp = stamp
        log.info("reloaded the serving certificate from %s", self.cert_file)
        return True
