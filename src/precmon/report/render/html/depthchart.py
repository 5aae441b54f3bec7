"""Decode tok/s vs context depth, one line per variant: an inline SVG for the HTML report.

No JavaScript and no library: a polyline per variant over the depths the file measured (evenly
spaced, labelled d0, d4096, …; depths grow geometrically, so an even spacing reads better than a
linear axis), a y axis from 0 to the largest rate, and a legend. Labels are escaped by the caller's
`escape` (report/render/html/page.py), passed in so this module has no HTML rules of its own.
"""

from __future__ import annotations

from collections.abc import Callable

from precmon.core.schema import ResultsDoc
from precmon.report.depth_rows import depth_points
from precmon.report.fmt import format_value

WIDTH, HEIGHT, LEFT, RIGHT, TOP, BOTTOM = 420, 220, 48, 110, 12, 28
COLORS = ("#2f81f7", "#d4a72c", "#1a7f37", "#cf222e", "#8250df", "#57606a")


def depth_chart_note(doc: ResultsDoc) -> str:
    """Why a variant with decode at a depth has no line in the chart ("" when none is missing).

    A line needs two depths; a sweep of one (`--depth 4096`, or d0 where d4096 failed) drew no
    chart and the page did not say why, so a reader looked for a chart that was never possible.
    """
    single = []
    for v in doc.variants:
        if len(points := depth_points(v)) == 1:
            single.append((v.label, points[0][0]))
    if not single:
        return ""
    lines = sum(len(depth_points(v)) > 1 for v in doc.variants)
    depths = sorted({d for _, d in single})
    if lines == 0 and len(depths) == 1:
        return f"depth chart: needs >= 2 depths; this sweep measured only d{depths[0]}"
    who = ", ".join(f"{label} only d{d}" for label, d in single)
    if lines == 0:
        return f"depth chart: needs >= 2 depths of one variant; measured {who}"
    return f"depth chart: a line needs >= 2 depths; left out: {who}"


def depth_chart(doc: ResultsDoc, escape: Callable[[object], str]) -> str:
    """The chart, or "" when no variant has decode at two depths or more."""
    lines = []
    for v in doc.variants:
        if len(points := depth_points(v)) > 1:
            lines.append((v.label, points))
    if not lines:
        return ""
    depths = sorted({d for _, pts in lines for d, _ in pts})
    top = max(r for _, pts in lines for _, r in pts)
    plot_w, plot_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM

    def x(depth: int) -> float:
        return LEFT + (depths.index(depth) / max(1, len(depths) - 1)) * plot_w

    def y(rate: float) -> float:
        return TOP + plot_h - (rate / top) * plot_h if top > 0 else TOP + plot_h

    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" viewBox="0 0 {WIDTH} {HEIGHT}" '
        'role="img" aria-label="Decode tok/s vs context depth">',
        f'<line x1="{LEFT}" y1="{TOP + plot_h}" x2="{LEFT + plot_w}" y2="{TOP + plot_h}" stroke="currentColor"/>',
        f'<line x1="{LEFT}" y1="{TOP}" x2="{LEFT}" y2="{TOP + plot_h}" stroke="currentColor"/>',
        f'<text x="{LEFT - 4}" y="{TOP + 10}" text-anchor="end">{escape(format_value(top))}</text>',
        f'<text x="{LEFT - 4}" y="{TOP + plot_h}" text-anchor="end">0</text>',
    ]
    for d in depths:
        parts.append(f'<text x="{x(d):.1f}" y="{HEIGHT - 8}" text-anchor="middle">d{d}</text>')
    for i, (label, pts) in enumerate(lines):
        color = COLORS[i % len(COLORS)]
        coords = " ".join(f"{x(d):.1f},{y(r):.1f}" for d, r in pts)
        parts.append(f'<polyline fill="none" stroke="{color}" stroke-width="2" points="{coords}"/>')
        parts += [f'<circle cx="{x(d):.1f}" cy="{y(r):.1f}" r="3" fill="{color}"/>' for d, r in pts]
        ly = TOP + 14 + i * 16
        parts.append(
            f'<line x1="{WIDTH - RIGHT + 10}" y1="{ly - 4}" x2="{WIDTH - RIGHT + 24}" y2="{ly - 4}" '
            f'stroke="{color}" stroke-width="2"/>'
        )
        parts.append(f'<text x="{WIDTH - RIGHT + 28}" y="{ly}">{escape(label[:14])}</text>')
    parts.append("</svg>")
    return "".join(parts)
