"""The placement map as one self-contained HTML file: inline SVG, a little CSS and JavaScript.

Nothing is fetched: no scripts, fonts or styles from the network, so the file opens offline and can
be attached to a ticket. Every host is one `<rect>` carrying its tooltip text; hovering shows it,
clicking a legend entry highlights that JobSet's (or state's) hosts. Planned hosts are hatched in
their JobSet's color, running ones solid; a domain's frame takes its holder's color (dashed when
the holder is only planned).
"""

from __future__ import annotations

from html import escape

from placer.render.maps.fleet_map import FleetMap, LegendEntry, MapHost, tint
from placer.render.maps.geometry import (
    BLOCK_PAD_PX,
    BLOCK_TITLE_PX,
    LABEL_PX,
    MapGeometry,
    arrange,
)

__all__ = ["render_map_html"]

_CSS = """
body{font:13px system-ui,-apple-system,'Segoe UI',Helvetica,Arial,sans-serif;margin:16px;color:#222}
h1{font-size:18px;margin:0 0 2px} .sub{color:#555;margin:0 0 10px}
.wrap{display:flex;gap:18px;align-items:flex-start}
.legend{min-width:250px;max-width:330px;position:sticky;top:8px}
.legend div{display:flex;align-items:center;gap:6px;padding:2px 4px;cursor:pointer;
border-radius:3px}
.legend div:hover,.legend div.on{background:#eef}
.legend .n{color:#666;margin-left:auto;padding-left:8px;white-space:nowrap}
.legend .note{color:#666;font-size:11px}
.legend h2{font-size:13px;margin:10px 0 4px}
.sw{width:14px;height:14px;flex:none;border:1px solid #888;box-sizing:border-box}
svg text{font-family:system-ui,-apple-system,'Segoe UI',Helvetica,Arial,sans-serif;fill:#333}
.blk{fill:#f6f6f6;stroke:#d8d8d8}
.h{stroke:#c8c8c8;stroke-width:.5}
svg.dim .h{opacity:.12} svg.dim .h.hit{opacity:1}
#tip{position:fixed;pointer-events:none;background:#222;color:#fff;padding:5px 7px;
border-radius:4px;font-size:12px;white-space:pre;display:none;z-index:9}
"""

_JS = """
(function(){
var tip=document.getElementById('tip'),svg=document.querySelector('svg.map');
svg.addEventListener('mousemove',function(e){var t=e.target.getAttribute('data-t');
if(!t){tip.style.display='none';return;}tip.textContent=t;tip.style.display='block';
tip.style.left=(e.clientX+14)+'px';tip.style.top=(e.clientY+12)+'px';});
svg.addEventListener('mouseleave',function(){tip.style.display='none';});
var cur=null;document.querySelectorAll('.legend [data-g]').forEach(function(el){
el.addEventListener('click',function(){var g=el.getAttribute('data-g');
document.querySelectorAll('.legend .on').forEach(function(o){o.classList.remove('on');});
var cells=svg.querySelectorAll('.h');cells.forEach(function(c){c.classList.remove('hit');});
if(cur===g){cur=null;svg.classList.remove('dim');return;}
cur=g;el.classList.add('on');svg.classList.add('dim');
cells.forEach(function(c){if(c.getAttribute('data-g')===g)c.classList.add('hit');});});});
})();
"""


def _group(host: MapHost, colored: set[str]) -> str:
    """What a legend click selects this host by: its JobSet, `others`, or its state."""
    if host.state in ("running", "planned"):
        return host.jobset if host.jobset in colored else "others"
    return host.state


def _tooltip(host: MapHost, domain: str, block: str) -> str:
    lines = [host.name, f"state: {host.state}" + (f" ({host.jobset})" if host.jobset else "")]
    if host.running:
        lines.append("running: " + ", ".join(host.running))
    if host.planned:
        lines.append("planned: " + ", ".join(host.planned))
    lines.append(f"domain: {domain}")
    lines.append(f"block: {block}")
    if host.accelerators:
        lines.append(f"accelerators: {host.free_accelerators} of {host.accelerators} free")
    if host.not_ready:
        lines.append("node NotReady")
    if host.cordoned:
        lines.append("node cordoned (unschedulable)")
    return "\n".join(lines)


def _patterns(fleet: FleetMap) -> tuple[str, dict[str, str]]:
    colors = sorted(
        {h.color for b in fleet.blocks for d in b.domains for h in d.hosts if h.state == "planned"}
    )
    ids: dict[str, str] = {}
    out: list[str] = []
    for i, color in enumerate(colors):
        ids[color] = f"p{i}"
        out.append(
            f'<pattern id="p{i}" width="4" height="4" patternUnits="userSpaceOnUse" '
            f'patternTransform="rotate(45)"><rect width="4" height="4" fill="{tint(color)}"/>'
            f'<rect width="1.6" height="4" fill="{color}"/></pattern>'
        )
    return "".join(out), ids


def _svg(fleet: FleetMap, geo: MapGeometry) -> str:
    defs, pattern_ids = _patterns(fleet)
    colored = {e.label for e in fleet.legend if e.kind in ("running", "planned")}
    parts = [
        f'<svg class="map" width="{geo.width:.0f}" height="{geo.height:.0f}" '
        f'viewBox="0 0 {geo.width:.0f} {geo.height:.0f}" role="img"><defs>{defs}</defs>'
    ]
    for b in geo.blocks:
        r = b.rect
        parts.append(
            f'<rect class="blk" x="{r.x:.1f}" y="{r.y:.1f}" width="{r.w:.1f}" '
            f'height="{r.h:.1f}" rx="3"/>'
            f'<text x="{r.x + BLOCK_PAD_PX:.1f}" y="{r.y + BLOCK_PAD_PX + BLOCK_TITLE_PX - 2:.1f}" '
            f'font-size="{BLOCK_TITLE_PX}" font-weight="600">{escape(b.title)}</text>'
        )
    where: dict[str, tuple[str, str]] = {}
    for box in geo.domains:
        d, r = box.domain, box.rect
        name = f"{d.key}={d.label}" if d.key else d.label
        held = (
            f"\nheld by {d.holder}" + (" (planned)" if d.holder_planned else "") if d.holder else ""
        )
        stroke = d.holder_color or "#bbbbbb"
        width = 2 if d.holder else 1
        dash = ' stroke-dasharray="4 2"' if d.holder and d.holder_planned else ""
        parts.append(
            f'<rect x="{r.x:.1f}" y="{r.y:.1f}" width="{r.w:.1f}" height="{r.h:.1f}" '
            f'fill="#f6f6f6" stroke="{stroke}" stroke-width="{width}"{dash} '
            f'data-t="{escape(f"domain {name}, {len(d.hosts)} hosts{held}")}"/>'
        )
        if box.label:
            parts.append(
                f'<text x="{r.x + 2:.1f}" y="{r.y + r.h - 3:.1f}" font-size="{LABEL_PX}">'
                f"{escape(box.label)}</text>"
            )
        for h in d.hosts:
            where[h.name] = (name, box.block)
    for cell in geo.cells:
        h, r = cell.host, cell.rect
        fill = f"url(#{pattern_ids[h.color]})" if h.state == "planned" else h.color
        tip = _tooltip(h, *where[h.name])
        parts.append(
            f'<rect class="h" x="{r.x:.1f}" y="{r.y:.1f}" width="{r.w:.1f}" height="{r.h:.1f}" '
            f'fill="{fill}" data-g="{escape(_group(h, colored))}" data-t="{escape(tip)}"/>'
        )
        if h.state in ("running", "planned") and (h.not_ready or h.cordoned):
            mark = "#212121" if h.not_ready else "#9e9e9e"
            s = r.w / 3
            parts.append(
                f'<rect x="{r.x + s:.1f}" y="{r.y + s:.1f}" width="{s:.1f}" height="{s:.1f}" '
                f'fill="{mark}" pointer-events="none"/>'
            )
    parts.append("</svg>")
    return "".join(parts)


def _swatch(entry: LegendEntry) -> str:
    if entry.kind == "planned":
        style = (
            f"background:repeating-linear-gradient(45deg,{entry.color} 0 2px,"
            f"{tint(entry.color)} 2px 5px)"
        )
    elif entry.kind == "others":
        style = (
            f"background:linear-gradient(135deg,{entry.color} 50%,transparent 50%),"
            f"repeating-linear-gradient(45deg,{entry.color} 0 2px,{tint(entry.color)} 2px 5px)"
        )
    else:
        style = f"background:{entry.color}"
    return f'<span class="sw" style="{style}"></span>'


def _legend(fleet: FleetMap) -> str:
    rows = ['<div class="legend"><h2>JobSets</h2>']
    for e in fleet.legend:
        if e.kind == "state":
            continue
        what = {"running": "running", "planned": "planned", "others": "running or planned"}[e.kind]
        group = "others" if e.kind == "others" else e.label
        rows.append(
            f'<div data-g="{escape(group)}" title="{what}">{_swatch(e)}<span>{escape(e.label)}'
            f'</span><span class="n">{what} · {e.hosts}</span></div>'
        )
    if not any(e.kind != "state" for e in fleet.legend):
        rows.append('<p class="note">no JobSet running or planned</p>')
    rows.append("<h2>Hosts</h2>")
    for e in fleet.legend:
        if e.kind != "state" or e.state is None:
            continue
        rows.append(
            f'<div data-g="{e.state}">{_swatch(e)}<span>{escape(e.label)}<br>'
            f'<span class="note">{escape(e.note)}</span></span>'
            f'<span class="n">{e.hosts}</span></div>'
        )
    rows.append(
        "<p class=\"note\">Solid: running. Hatched: planned. A domain's frame takes its holder's "
        "color, dashed when only planned. A small square marks a NotReady (black) or cordoned "
        "(gray) host under a JobSet. Click an entry to highlight its hosts; hover a host for "
        "details.</p></div>"
    )
    return "".join(rows)


def render_map_html(fleet: FleetMap) -> str:
    """The whole HTML document for `fleet`."""
    geo = arrange(fleet)
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>{escape(fleet.title)}</title><style>{_CSS}</style></head><body>"
        f'<h1>{escape(fleet.title)}</h1><p class="sub">{escape(fleet.subtitle)}</p>'
        f'<div class="wrap">{_legend(fleet)}<div>{_svg(fleet, geo)}</div></div>'
        f'<div id="tip"></div><script>{_JS}</script></body></html>\n'
    )
