"""placer."""
