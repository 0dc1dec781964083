"""Build the upstream control-plane binaries the cluster tests run, once per machine.

`python -m tests.cluster.build` builds kube-apiserver, kube-controller-manager,
kube-scheduler, etcd, the JobSet manager and the Kueue manager from the Go module
proxy (the module in tests/cluster/upstream pins their versions; no upstream source
lives in this repository) into a cache directory outside the work tree, keyed by
those versions and the module's go.sum, and prints that directory. A second run
finds the binaries there and builds nothing. The CRDs and webhook manifests the
fixture installs are read from the same modules in the Go module cache, so they
always match the binaries.

The cache root is `$PLACER_UPSTREAM_CACHE`, else `~/.cache/placer/upstream`.

`$PLACER_KUBERNETES=v1.37` builds kube-apiserver, kube-controller-manager and kube-scheduler from
the module in tests/cluster/kubernetes/v1.37 instead (the next Kubernetes release; etcd, JobSet and
Kueue stay as pinned, built against the libraries they were released with), into a cache
directory of its own; the cluster tests then run against that release. `v1.38` is the beta of
the release after it, whose go line asks for Go 1.27 (fetched from the module proxy as a
toolchain). Unset, the default release, the one CI runs, is the one tests/cluster/upstream pins.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

MODULE_DIR = Path(__file__).resolve().parent / "upstream"
KUBERNETES_DIR = Path(__file__).resolve().parent / "kubernetes"
"""Other Kubernetes releases, one Go module each (`v1.37/`, `v1.38/`), chosen by
`$PLACER_KUBERNETES`."""
KUBERNETES = "k8s.io/kubernetes"


@dataclass(frozen=True)
class Program:
    """One binary: the name it is installed under and the main package it is built from."""

    name: str
    package: str
    module: str


PROGRAMS = (
    Program("kube-apiserver", "k8s.io/kubernetes/cmd/kube-apiserver", "k8s.io/kubernetes"),
    Program(
        "kube-controller-manager",
        "k8s.io/kubernetes/cmd/kube-controller-manager",
        "k8s.io/kubernetes",
    ),
    Program("kube-scheduler", "k8s.io/kubernetes/cmd/kube-scheduler", "k8s.io/kubernetes"),
    Program("etcd", "placer.dev/tests/upstream/etcd", "go.etcd.io/etcd/server/v3"),
    Program("jobset", "sigs.k8s.io/jobset", "sigs.k8s.io/jobset"),
    Program("kueue", "sigs.k8s.io/kueue/cmd/kueue", "sigs.k8s.io/kueue"),
)


def kubernetes_module() -> Path:
    """The module the three Kubernetes programs are built from: `$PLACER_KUBERNETES`'s, else the
    one that pins every upstream program."""
    chosen = os.environ.get("PLACER_KUBERNETES", "")
    if not chosen:
        return MODULE_DIR
    known = sorted(p.name for p in KUBERNETES_DIR.iterdir() if (p / "go.mod").is_file())
    if chosen not in known:
        raise SystemExit(
            f"PLACER_KUBERNETES={chosen}: no module tests/cluster/kubernetes/{chosen}/go.mod "
            f"(known: {', '.join(known)}; unset for the default release)"
        )
    return KUBERNETES_DIR / chosen


def module_dir(program: Program) -> Path:
    return kubernetes_module() if program.module == KUBERNETES else MODULE_DIR


def _pinned(directory: Path, wanted: set[str]) -> dict[str, str]:
    versions: dict[str, str] = {}
    for line in (directory / "go.mod").read_text().splitlines():
        words = line.split()
        if words[:1] == ["require"]:  # the one-line form, `require MODULE VERSION`
            words = words[1:]
        if len(words) >= 2 and words[0] in wanted and words[1].startswith("v"):
            versions[words[0]] = words[1]
    missing = wanted - versions.keys()
    if missing:
        where = directory.relative_to(MODULE_DIR.parent)
        raise SystemExit(f"tests/cluster/{where}/go.mod: no version for {sorted(missing)}")
    return versions


def module_versions() -> dict[str, str]:
    """The version each upstream program's module pins (what the cache is keyed by)."""
    versions = _pinned(MODULE_DIR, {program.module for program in PROGRAMS})
    if kubernetes_module() != MODULE_DIR:
        versions.update(_pinned(kubernetes_module(), {KUBERNETES}))
    return versions


def cache_key() -> str:
    """Directory name: the pinned versions, readable, plus a digest of go.sum and the flags."""
    versions = module_versions()
    short = {
        "k8s.io/kubernetes": "k8s",
        "go.etcd.io/etcd/server/v3": "etcd",
        "sigs.k8s.io/jobset": "jobset",
        "sigs.k8s.io/kueue": "kueue",
    }
    readable = "_".join(f"{short[module]}-{versions[module]}" for module in short)
    digest = hashlib.sha256()
    for name in ("go.mod", "go.sum", "tools.go", "etcd/main.go"):
        digest.update((MODULE_DIR / name).read_bytes())
    digest.update(json.dumps(ldflags(_pinned(MODULE_DIR, {KUBERNETES}))).encode())
    if kubernetes_module() != MODULE_DIR:
        for name in ("go.mod", "go.sum", "tools.go"):
            digest.update((kubernetes_module() / name).read_bytes())
    return f"{readable}-{digest.hexdigest()[:12]}"


def ldflags(versions: dict[str, str]) -> str:
    """Version stamps, as Kubernetes' own build sets them, so /version reports the release."""
    kubernetes = versions[KUBERNETES]
    major, minor = kubernetes.lstrip("v").split(".")[:2]
    stamps = []
    for package in ("k8s.io/component-base/version", "k8s.io/client-go/pkg/version"):
        stamps += [
            f"-X {package}.gitVersion={kubernetes}",
            f"-X {package}.gitMajor={major}",
            f"-X {package}.gitMinor={minor}",
            f"-X {package}.gitTreeState=clean",
        ]
    return " ".join(["-s", "-w", *stamps])


def cache_root() -> Path:
    configured = os.environ.get("PLACER_UPSTREAM_CACHE")
    return Path(configured) if configured else Path.home() / ".cache" / "placer" / "upstream"


def binary_dir() -> Path:
    """Where the binaries of the pinned versions live (built or not)."""
    return cache_root() / cache_key() / "bin"


def missing_programs(directory: Path) -> list[Program]:
    return [program for program in PROGRAMS if not (directory / program.name).is_file()]


def build(directory: Path, programs: list[Program]) -> float:
    """Build `programs` into `directory`; returns the seconds it took.

    Each binary is built into a temporary directory and renamed into place, so an
    interrupted build never leaves a partial binary that a later run would trust.
    """
    go = shutil.which("go")
    if go is None:
        raise SystemExit(
            "tests/cluster/build.py: no 'go' on PATH (Go 1.26 builds the control plane)"
        )
    directory.mkdir(parents=True, exist_ok=True)
    environment = dict(os.environ, CGO_ENABLED="0", GOFLAGS="-mod=mod -buildvcs=false")
    # A module whose go line asks for a newer Go than the installed one (v1.38 needs Go 1.27)
    # has the go command fetch that toolchain from the module proxy; the default module asks
    # for the installed Go, which then builds as before. A GOTOOLCHAIN the user set wins.
    environment.setdefault("GOTOOLCHAIN", "auto")
    started = time.monotonic()
    for module in sorted({module_dir(program) for program in programs}):
        group = [program for program in programs if module_dir(program) == module]
        # each module's binaries stamped with the Kubernetes release its own go.mod pins
        flags = ldflags(_pinned(module, {KUBERNETES}))
        with tempfile.TemporaryDirectory(dir=directory.parent, prefix=".building-") as scratch:
            command = [go, "build", "-trimpath", f"-ldflags={flags}", "-o", scratch]
            command += [program.package for program in group]
            names = ", ".join(p.name for p in group)
            print(f"building {names} ...", file=sys.stderr, flush=True)
            subprocess.run(command, cwd=module, env=environment, check=True)
            for program in group:
                built = Path(scratch) / Path(program.package).name
                os.replace(built, directory / program.name)
    return time.monotonic() - started


def module_source(module: str) -> Path:
    """The module cache directory of one pinned upstream module (for its CRDs and manifests)."""
    output = subprocess.run(
        ["go", "mod", "download", "-json", f"{module}@{module_versions()[module]}"],
        cwd=MODULE_DIR,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return Path(json.loads(output)["Dir"])


def ensure() -> Path:
    """The binary directory, building whatever is missing first."""
    directory = binary_dir()
    programs = missing_programs(directory)
    if programs:
        seconds = build(directory, programs)
        print(f"built in {seconds:.0f} s: {directory}", file=sys.stderr)
    return directory


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.cluster.build", description=__doc__)
    parser.add_argument(
        "--print-dir", action="store_true", help="print the binary directory, build nothing"
    )
    arguments = parser.parse_args(argv)
    if arguments.print_dir:
        print(binary_dir())
        return 0
    print(ensure())
    return 0


if __name__ == "__main__":
    sys.exit(main())
