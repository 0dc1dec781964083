"""Where each block, domain and host of a `FleetMap` goes on the canvas, in pixels.

Shared by the HTML and PNG writers so both draw the same picture. Hosts are square cells in a
near-square grid per domain; domains flow left to right inside their block, wrapping at the block
width; blocks are packed in shelves across the canvas. Cell size shrinks with the fleet (22 px for a
few hundred hosts, 7 px at ten thousand) and the canvas width grows with the total area, so a
10,000-host fleet fits in about 1,700 x 1,000 pixels; domain labels are drawn only while there are
few enough domains to read them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from placer.render.maps.fleet_map import FleetMap, MapDomain, MapHost

__all__ = [
    "BlockBox",
    "DomainBox",
    "HostCell",
    "MapGeometry",
    "Rect",
    "arrange",
    "short_label",
    "text_width_px",
]

BLOCK_PAD_PX = 6
BLOCK_TITLE_PX = 12
DOMAIN_PAD_PX = 2
LABEL_PX = 10
LABEL_CHARS = 18
DETAIL_DOMAINS = 160
"""Up to this many domains, each gets its label under it."""
MIN_WIDTH_PX = 480
MAX_WIDTH_PX = 2400


def text_width_px(text: str, font_px: float) -> float:
    """A generous estimate of rendered width (sans-serif averages about 0.6 em per character)."""
    return len(text) * font_px * 0.62


@dataclass(frozen=True)
class Rect:
    x: float
    y: float
    w: float
    h: float


@dataclass(frozen=True)
class HostCell:
    rect: Rect
    host: MapHost


@dataclass(frozen=True)
class DomainBox:
    rect: Rect
    domain: MapDomain
    label: str
    """Shown under the grid ('' when domains are too many to label)."""
    block: str
    """The title of the block it sits in."""


@dataclass(frozen=True)
class BlockBox:
    rect: Rect
    title: str


@dataclass(frozen=True)
class MapGeometry:
    width: float
    height: float
    cell_px: float
    blocks: tuple[BlockBox, ...]
    domains: tuple[DomainBox, ...]
    cells: tuple[HostCell, ...]


def _cell_px(hosts: int) -> tuple[float, float]:
    """(cell size, gap between cells) for a fleet of this many hosts."""
    if hosts <= 300:
        return 22, 2
    if hosts <= 1500:
        return 14, 2
    if hosts <= 5000:
        return 9, 1
    return 7, 1


def _grid(n: int) -> tuple[int, int]:
    """(columns, rows): a full rectangle at most 2:1 wide when one exists (8 -> 4x2), else
    near-square with the last row short (an empty slot could be mistaken for a free host)."""
    side = max(1, math.ceil(math.sqrt(n)))
    for cols in range(side, 2 * side + 1):
        if n % cols == 0 and cols <= 2 * (n // cols):
            return cols, n // cols
    return side, max(1, math.ceil(n / side))


def short_label(text: str, chars: int = LABEL_CHARS) -> str:
    """The tail of a long value, where pool and clique names differ (`…b5a69.3`)."""
    return text if len(text) <= chars else "\u2026" + text[-(chars - 1) :]


@dataclass(frozen=True)
class _Sized:
    domain: MapDomain
    w: float
    h: float
    cols: int
    label: str


def _size_domain(d: MapDomain, cell: float, gap: float, labelled: bool) -> _Sized:
    cols, rows = _grid(len(d.hosts))
    w = cols * cell + (cols - 1) * gap + 2 * DOMAIN_PAD_PX
    h = rows * cell + (rows - 1) * gap + 2 * DOMAIN_PAD_PX
    label = short_label(d.label) if labelled else ""
    if label:
        w = max(w, text_width_px(label, LABEL_PX) + 4)
        h += LABEL_PX + 6
    return _Sized(d, w, h, cols, label)


def _flow(
    items: list[_Sized], width: float, spacing: float
) -> tuple[list[tuple[float, float]], float, float]:
    """Positions of items flowed into rows of at most `width`; (positions, used width, height)."""
    pos: list[tuple[float, float]] = []
    x = y = row_h = used = 0.0
    for it in items:
        if x > 0 and x + it.w > width:
            y += row_h + spacing
            x = row_h = 0.0
        pos.append((x, y))
        x += it.w + spacing
        used = max(used, x - spacing)
        row_h = max(row_h, it.h)
    return pos, used, y + row_h


def arrange(fleet: FleetMap, *, width_px: float | None = None) -> MapGeometry:
    """Pixel geometry of the map; `width_px` overrides the canvas width chosen from the area."""
    cell, gap = _cell_px(fleet.hosts)
    labelled = fleet.domains <= DETAIL_DOMAINS
    spacing = 6 if labelled else 4
    sized = [[_size_domain(d, cell, gap, labelled) for d in b.domains] for b in fleet.blocks]
    area = sum((s.w + spacing) * (s.h + spacing) for blk in sized for s in blk)
    area += len(fleet.blocks) * (BLOCK_TITLE_PX + 3 * BLOCK_PAD_PX) * 200
    widest = max((s.w for blk in sized for s in blk), default=0.0) + 2 * BLOCK_PAD_PX
    width = width_px or min(MAX_WIDTH_PX, max(MIN_WIDTH_PX, math.sqrt(area * 1.9)))
    width = max(width, widest)

    blocks: list[BlockBox] = []
    domains: list[DomainBox] = []
    cells: list[HostCell] = []
    bx = by = shelf_h = 0.0
    for block, items in zip(fleet.blocks, sized, strict=True):
        inner = width - 2 * BLOCK_PAD_PX
        pos, used, inner_h = _flow(items, inner, spacing)
        title_w = text_width_px(block.title, BLOCK_TITLE_PX)
        bw = min(width, max(used, title_w) + 2 * BLOCK_PAD_PX)
        bh = BLOCK_TITLE_PX + 2 * BLOCK_PAD_PX + inner_h + BLOCK_PAD_PX
        if bx > 0 and bx + bw > width:
            by += shelf_h + BLOCK_PAD_PX
            bx = shelf_h = 0.0
        blocks.append(BlockBox(Rect(bx, by, bw, bh), block.title))
        top = by + BLOCK_TITLE_PX + 2 * BLOCK_PAD_PX
        for (dx, dy), s in zip(pos, items, strict=True):
            x0, y0 = bx + BLOCK_PAD_PX + dx, top + dy
            domains.append(DomainBox(Rect(x0, y0, s.w, s.h), s.domain, s.label, block.title))
            for i, host in enumerate(s.domain.hosts):
                r, c = divmod(i, s.cols)
                cx = x0 + DOMAIN_PAD_PX + c * (cell + gap)
                cy = y0 + DOMAIN_PAD_PX + r * (cell + gap)
                cells.append(HostCell(Rect(cx, cy, cell, cell), host))
        bx += bw + BLOCK_PAD_PX
        shelf_h = max(shelf_h, bh)
    return MapGeometry(
        width=width,
        height=by + shelf_h,
        cell_px=cell,
        blocks=tuple(blocks),
        domains=tuple(domains),
        cells=tuple(cells),
    )
