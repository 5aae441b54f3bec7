"""The Pareto view of the HTML report: quality loss against speed and against energy.

Two inline SVG scatter plots, one point per variant with measured mean KL: x = mean KL vs the
baseline (nats, from 0), y = decode tok/s (higher is better), then J/token (lower is better).
A point no other variant beats on both axes is on the frontier: filled, and joined by a line;
the others are hollow. Variants whose quality cannot be judged (analysis/quality_bands.py) are
drawn grey and never on the frontier, so the chart does not vouch for them. Labels come from
results files: escaped by the caller's `escape`.
"""

from __future__ import annotations

from collections.abc import Callable

from precmon.core.metric_keys import KEY
from precmon.core.schema import ResultsDoc
from precmon.report.analysis.quality_bands import measured
from precmon.report.fmt import format_value
from precmon.report.table import ComparisonTable

W, H, PAD_L, PAD_B, PAD_T, PAD_R = 520, 260, 64, 36, 12, 90
Point = tuple[str, float, float, bool]  # (label, KL, y, judged)


def _points(doc: ResultsDoc, t: ComparisonTable, key: str) -> list[Point]:
    variants = doc.variants
    out: list[Point] = []
    for i, col in enumerate(t.columns):
        q = measured(variants[i]) if i < len(variants) else None
        y = t.value(key, col.label)
        if q is not None and y is not None and col.status != "failed":
            judged = q.baseline == col.label or q.verdict().judged
            out.append((col.label, q.kld_mean_nats, y, judged))
    return out


def frontier(points: list[Point], higher: bool) -> list[Point]:
    """The judged points no other judged point beats on both (lower KL, better y), by KL."""
    judged = [p for p in points if p[3]]

    def beats(a: Point, b: Point) -> bool:
        better_y = a[2] >= b[2] if higher else a[2] <= b[2]
        return a[1] <= b[1] and better_y and (a[1], a[2]) != (b[1], b[2])

    return sorted((p for p in judged if not any(beats(o, p) for o in judged)), key=lambda p: p[1])


def scatter(points: list[Point], y_label: str, higher: bool, escape: Callable[[object], str]) -> str:
    """One SVG scatter of (KL, y) with the frontier drawn; "" for fewer than two points."""
    if len(points) < 2:
        return ""
    x_max = max(p[1] for p in points) or 1.0
    y_max = max(p[2] for p in points) or 1.0

    def at(p: Point) -> tuple[float, float]:
        x = PAD_L + p[1] / x_max * (W - PAD_L - PAD_R)
        y = H - PAD_B - p[2] / y_max * (H - PAD_B - PAD_T)
        return x, y

    front = frontier(points, higher)
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" viewBox="0 0 {W} {H}" role="img" '
        f'aria-label="mean KL vs {escape(y_label)}">',
        f'<line x1="{PAD_L}" y1="{H - PAD_B}" x2="{W - PAD_R}" y2="{H - PAD_B}" stroke="#888"/>',
        f'<line x1="{PAD_L}" y1="{PAD_T}" x2="{PAD_L}" y2="{H - PAD_B}" stroke="#888"/>',
        f'<text x="{(W - PAD_R + PAD_L) / 2}" y="{H - 6}" text-anchor="middle">mean KL vs baseline (nats, 0 to '
        f"{escape(format_value(x_max))})</text>",
        f'<text x="4" y="{PAD_T + 10}">{escape(y_label)}</text>',
        f'<text x="{PAD_L - 4}" y="{PAD_T + 10}" text-anchor="end">{escape(format_value(y_max))}</text>',
    ]
    if len(front) > 1:
        path = " ".join(f"{x:.1f},{y:.1f}" for x, y in map(at, front))
        parts.append(f'<polyline points="{path}" fill="none" stroke="#2a7" stroke-width="1.5"/>')
    for p in points:
        x, y = at(p)
        on = p in front
        colour = "#2a7" if p[3] else "#aaa"
        fill = colour if on else "white"
        parts.append(f'<circle cx="{x:.1f}" cy="{y:.1f}" r="5" fill="{fill}" stroke="{colour}" stroke-width="2"/>')
        note = "" if p[3] else " (cannot be judged)"
        parts.append(f'<text x="{x + 8:.1f}" y="{y + 4:.1f}">{escape(p[0] + note)}</text>')
    parts.append("</svg>")
    return "".join(parts)


def pareto_section(doc: ResultsDoc, t: ComparisonTable, escape: Callable[[object], str]) -> str:
    """The HTML section (heading and the two charts), or "" where quality was not measured."""
    charts = []
    for key, label, higher in (
        (KEY.decode_tok_s, "decode tok/s (higher is better)", True),
        (KEY.energy_decode_j_per_token, "J/token (lower is better)", False),
    ):
        svg = scatter(_points(doc, t, key), label, higher, escape)
        if svg:
            charts.append(f"<figure><figcaption>Quality loss vs {escape(label)}</figcaption>{svg}</figure>")
    if not charts:
        return ""
    return (
        '<h2>Quality vs speed and energy (Pareto)</h2><p class="muted">Filled points are on the frontier: '
        'no other judged variant has both a lower KL and a better value.</p><div class="charts" id="pareto">'
        + "".join(charts)
        + "</div>"
    )
