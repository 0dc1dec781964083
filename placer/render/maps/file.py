"""Writing a placement map to the file `--map` names: the format follows the extension.

`.html`/`.htm` need nothing beyond placer; `.png` needs matplotlib (the `map` extra). Commands call
`check_map_path` before any work, so a wrong extension or a missing matplotlib costs no solve,
then `write_map` at the end. Both raise `InputError` (one line, exit 2).
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

from placer.model.errors import InputError
from placer.render.maps.fleet_map import FleetMap
from placer.render.maps.html import render_map_html
from placer.render.maps.png import MISSING_MATPLOTLIB, write_map_png

__all__ = ["MAP_SUFFIXES", "check_map_path", "write_map"]

MAP_SUFFIXES = (".html", ".htm", ".png")


def check_map_path(path: str) -> Path:
    """The path if placer can write a map there in the format its extension names."""
    target = Path(path)
    suffix = target.suffix.lower()
    if suffix not in MAP_SUFFIXES:
        raise InputError(
            f"unknown map format {suffix or '(no extension)'}: name a .html or .png file",
            source=path,
            field="--map",
            code="usage",
        )
    if suffix == ".png" and importlib.util.find_spec("matplotlib") is None:
        raise InputError(MISSING_MATPLOTLIB, source=path, field="--map", code="missing-dependency")
    return target


def write_map(fleet: FleetMap, path: str) -> Path:
    """Write `fleet` as HTML or PNG, by the extension of `path`."""
    target = check_map_path(path)
    try:
        if target.suffix.lower() == ".png":
            return write_map_png(fleet, target)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(render_map_html(fleet), encoding="utf-8")
        return target
    except OSError as e:
        raise InputError(
            f"cannot write the map: {e.strerror or e}", source=path, field="--map", code="map"
        ) from e
