"""`python -m placer`: the same command line as the `placer` console script."""

from __future__ import annotations

from placer.cli import run

if __name__ == "__main__":
    run()
