"""The placement map as a PNG, drawn with matplotlib (the optional `map` extra).

Same geometry as the HTML map (`geometry.arrange`), laid out in pixels: the legend in a column
on the left, the fleet on the right. Rectangles go in a few collections (one per fill kind) so a
10,000-host map draws in seconds. matplotlib is imported only when a PNG is asked for.
"""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

from placer.model.errors import InputError
from placer.render.maps.fleet_map import FleetMap, LegendEntry, tint
from placer.render.maps.geometry import (
    BLOCK_PAD_PX,
    BLOCK_TITLE_PX,
    LABEL_PX,
    MapGeometry,
    arrange,
    text_width_px,
)

__all__ = ["MISSING_MATPLOTLIB", "write_map_png"]

MISSING_MATPLOTLIB = "a PNG map needs matplotlib: pip install 'placer[map]' (or write .html)"
DPI = 100
MARGIN_PX = 16
LEGEND_PX = 300
HEADER_PX = 52
ROW_PX = 20


def _pt(px: float) -> float:
    """matplotlib sizes text in points; the canvas is laid out in pixels."""
    return px * 72 / DPI


def _load() -> tuple[Any, Any, Any, Any]:
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.collections import PolyCollection
        from matplotlib.figure import Figure
        from matplotlib.patches import Rectangle
    except ImportError as e:
        raise InputError(MISSING_MATPLOTLIB, field="--map", code="missing-dependency") from e
    return Figure, FigureCanvasAgg, PolyCollection, Rectangle


def _legend_lines(fleet: FleetMap) -> list[tuple[LegendEntry | None, str, str]]:
    """(entry or None for a heading, main text, right-hand text), top to bottom."""
    lines: list[tuple[LegendEntry | None, str, str]] = [(None, "JobSets", "")]
    for e in fleet.legend:
        if e.kind != "state":
            kind = "running or planned" if e.kind == "others" else e.kind
            lines.append((e, e.label, f"{kind} {e.hosts}"))
    if len(lines) == 1:
        lines.append((None, "(none running or planned)", ""))
    lines.append((None, "Hosts", ""))
    for e in fleet.legend:
        if e.kind == "state":
            lines.append((e, e.label, str(e.hosts)))
            lines.extend((None, "  " + part, "") for part in textwrap.wrap(e.note, 44))
    return lines


def write_map_png(fleet: FleetMap, path: Path) -> Path:
    """Draw `fleet` into `path` (PNG); InputError if matplotlib is missing."""
    figure_cls, canvas_cls, collection_cls, rect_cls = _load()
    geo = arrange(fleet)
    lines = _legend_lines(fleet)
    legend_h = len(lines) * ROW_PX + 60
    width = MARGIN_PX * 3 + LEGEND_PX + geo.width
    height = HEADER_PX + max(geo.height, legend_h) + MARGIN_PX
    fig = figure_cls(figsize=(width / DPI, height / DPI), dpi=DPI)
    canvas_cls(fig)
    ax = fig.add_axes((0, 0, 1, 1))
    ax.set_xlim(0, width)
    ax.set_ylim(height, 0)
    ax.axis("off")
    ax.text(MARGIN_PX, 24, fleet.title, fontsize=_pt(18), fontweight="bold", va="baseline")
    ax.text(MARGIN_PX, 42, fleet.subtitle, fontsize=_pt(12), color="#555555", va="baseline")
    _draw_legend(ax, rect_cls, lines, MARGIN_PX, HEADER_PX)
    _draw_fleet(ax, collection_cls, geo, MARGIN_PX * 2 + LEGEND_PX, HEADER_PX)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(str(path), dpi=DPI, format="png", facecolor="white")
    return path


Quad = tuple[tuple[float, float], ...]


def _quad(x: float, y: float, w: float, h: float) -> Quad:
    """A rectangle as the vertex list PolyCollection takes (much cheaper than Rectangle patches)."""
    return ((x, y), (x + w, y), (x + w, y + h), (x, y + h))


def _swatch(ax: Any, rect_cls: Any, e: LegendEntry, x: float, y: float) -> None:
    if e.kind == "planned":
        ax.add_patch(
            rect_cls((x, y), 14, 14, facecolor=tint(e.color), edgecolor=e.color, hatch="////")
        )
    else:
        ax.add_patch(rect_cls((x, y), 14, 14, facecolor=e.color, edgecolor="#888888", lw=0.8))


def _draw_legend(ax: Any, rect_cls: Any, lines: list[Any], x0: float, y0: float) -> None:
    y = y0 + 4
    for entry, text, right in lines:
        if entry is None and text in ("JobSets", "Hosts"):
            ax.text(x0, y + 12, text, fontsize=_pt(13), fontweight="bold", va="baseline")
        elif entry is None:
            ax.text(x0 + 20, y + 6, text.strip(), fontsize=_pt(10), color="#666666", va="baseline")
        else:
            _swatch(ax, rect_cls, entry, x0, y + 1)
            shown = text if text_width_px(text, 12) < LEGEND_PX - 110 else text[:26] + "\u2026"
            ax.text(x0 + 20, y + 12, shown, fontsize=_pt(12), va="baseline")
            ax.text(x0 + LEGEND_PX, y + 12, right, fontsize=_pt(11), color="#666666", ha="right")
        y += ROW_PX if entry is not None or text in ("JobSets", "Hosts") else ROW_PX - 4
    notes = (
        "Solid: running. Hatched: planned.",
        "Domain frame: its holder's color",
        "(dashed when only planned).",
        "Small square: NotReady (black) or",
        "cordoned (gray) host under a JobSet.",
    )
    for note in notes:
        y += 15
        ax.text(x0, y + 6, note, fontsize=_pt(10), color="#666666", va="baseline")


def _draw_fleet(ax: Any, collection_cls: Any, geo: MapGeometry, x0: float, y0: float) -> None:
    blocks = [_quad(x0 + b.rect.x, y0 + b.rect.y, b.rect.w, b.rect.h) for b in geo.blocks]
    ax.add_collection(
        collection_cls(blocks, facecolor="#f6f6f6", edgecolor="#d8d8d8", linewidth=0.8)
    )
    for b in geo.blocks:
        ax.text(
            x0 + b.rect.x + BLOCK_PAD_PX,
            y0 + b.rect.y + BLOCK_PAD_PX + BLOCK_TITLE_PX - 2,
            b.title,
            fontsize=_pt(BLOCK_TITLE_PX),
            fontweight="bold",
            va="baseline",
        )
    thin = geo.cell_px < 10
    frames: dict[tuple[str, bool], list[Quad]] = {}
    for d in geo.domains:
        r = d.rect
        key = (d.domain.holder_color or "#bbbbbb", d.domain.holder_planned)
        frames.setdefault(key, []).append(_quad(x0 + r.x, y0 + r.y, r.w, r.h))
        if d.label:
            ax.text(
                x0 + r.x + 2, y0 + r.y + r.h - 3, d.label, fontsize=_pt(LABEL_PX), va="baseline"
            )
    for (color, planned), patches in frames.items():
        held = color != "#bbbbbb"
        ax.add_collection(
            collection_cls(
                patches,
                facecolor="none",
                edgecolor=color,
                linewidth=(1.2 if thin else 1.8) if held else 0.6,
                linestyle=(0, (3, 2)) if planned else "solid",
            )
        )
    solid: dict[str, list[Quad]] = {}
    hatched: dict[str, list[Quad]] = {}
    marks: dict[str, list[Quad]] = {}
    for c in geo.cells:
        r, h = c.rect, c.host
        patch = _quad(x0 + r.x, y0 + r.y, r.w, r.h)
        (hatched if h.state == "planned" else solid).setdefault(h.color, []).append(patch)
        if h.state in ("running", "planned") and (h.not_ready or h.cordoned):
            s = r.w / 3
            mark = "#212121" if h.not_ready else "#9e9e9e"
            marks.setdefault(mark, []).append(_quad(x0 + r.x + s, y0 + r.y + s, s, s))
    for color, patches in solid.items():
        edge = "#c8c8c8" if color == "#ffffff" else color
        ax.add_collection(collection_cls(patches, facecolor=color, edgecolor=edge, linewidth=0.4))
    for color, patches in hatched.items():
        ax.add_collection(
            collection_cls(
                patches,
                facecolor=tint(color),
                edgecolor=color,
                hatch="///" if thin else "////",
                linewidth=0.4,
            )
        )
    for color, patches in marks.items():
        ax.add_collection(collection_cls(patches, facecolor=color, edgecolor="none"))
