"""`placer plan` (not built yet)."""

from __future__ import annotations

import argparse

__all__ = ["register"]


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = sub.add_parser("plan", help="not available yet")
    parser.set_defaults(func=lambda args: 2)
