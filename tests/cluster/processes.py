"""One upstream program run by the test control plane: started, probed, stopped, its log kept.

Every component binds 127.0.0.1 only; ports are taken free from the kernel on loopback. A
component runs in its own process group so stopping it also stops anything it spawned.
"""

from __future__ import annotations

import ctypes
import os
import signal
import socket
import ssl
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["Component", "ComponentExited", "free_port", "wait_until"]

LOOPBACK = "127.0.0.1"


def free_port() -> int:
    """A TCP port on 127.0.0.1 nothing listens on now (the kernel's choice)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind((LOOPBACK, 0))
        return int(probe.getsockname()[1])


def _die_with_parent() -> None:
    """In the child, before exec: SIGKILL when the process that started it dies.

    A test run or benchmark killed by a timeout runs no `finally`; without this its etcd, API
    server and managers would outlive it, holding ports and CPU.
    """
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL)


PR_SET_PDEATHSIG = 1


class ComponentExited(RuntimeError):
    """A component died while something waited on it: waiting longer cannot help."""


def wait_until(
    condition: Callable[[], object], *, timeout_s: float, what: str, interval_s: float = 0.2
) -> None:
    """Poll `condition` until it holds; fail the test with `what` when `timeout_s` passes."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            if condition():
                return
        except ComponentExited:
            raise
        except Exception:  # a probe that raises is a probe that is not yet true
            pass
        if time.monotonic() > deadline:
            raise TimeoutError(f"timed out after {timeout_s:.0f} s waiting for {what}")
        time.sleep(interval_s)


@dataclass
class Component:
    """A long-running upstream process with its own log file."""

    name: str
    argv: list[str]
    log_path: Path
    health_url: str | None = None
    """An HTTPS or HTTP URL that answers 200 once the component is ready."""
    tls: ssl.SSLContext | None = None
    env: dict[str, str] = field(default_factory=dict)
    process: subprocess.Popen[bytes] | None = None

    def start(self, *, ready_timeout_s: float = 120.0) -> None:
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        log = self.log_path.open("ab")
        log.write(f"\n=== start {' '.join(self.argv)}\n".encode())
        log.flush()
        self.process = subprocess.Popen(
            self.argv,
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env={**os.environ, **self.env},
            start_new_session=True,
            preexec_fn=_die_with_parent,
        )
        log.close()
        if self.health_url is not None:
            wait_until(self._healthy, timeout_s=ready_timeout_s, what=f"{self.name} to be ready")

    def _healthy(self) -> bool:
        if self.process is not None and self.process.poll() is not None:
            raise ComponentExited(
                f"{self.name} exited with {self.process.returncode}; log: {self.log_path}\n"
                + self.log_tail()
            )
        assert self.health_url is not None
        try:
            with urllib.request.urlopen(self.health_url, timeout=2, context=self.tls) as answer:
                return bool(answer.status == 200)
        except (urllib.error.URLError, OSError):
            return False

    @property
    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def stop(self, *, sig: int = signal.SIGTERM, timeout_s: float = 20.0) -> None:
        """Stop the process group: `sig` first, SIGKILL if it outlives `timeout_s`."""
        if self.process is None or self.process.poll() is not None:
            return
        try:
            os.killpg(self.process.pid, sig)
            self.process.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(timeout=timeout_s)
        except ProcessLookupError:
            pass

    def kill(self) -> None:
        """SIGKILL, as a crash: no shutdown handler runs."""
        self.stop(sig=signal.SIGKILL)

    def restart(self, *, ready_timeout_s: float = 120.0) -> None:
        self.stop()
        self.start(ready_timeout_s=ready_timeout_s)

    def log_tail(self, lines: int = 40) -> str:
        try:
            text = self.log_path.read_text(errors="replace")
        except OSError:
            return ""
        return "\n".join(text.splitlines()[-lines:])
