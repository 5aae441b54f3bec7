"""The standalone HTML report: one file, no external assets, no JavaScript.

Inline CSS (light and dark via `prefers-color-scheme`), the comparison table, and small inline SVG
bar charts for decode tok/s, prefill ms/token, decode power and J/token (and a line chart of
decode vs context depth where the file has depths, depthchart.py, or a note why a variant has no
line), so the page can be mailed, attached to an issue or opened offline. Renders a
`sections.Report`; every string from the file is escaped (`escape`).
"""

from __future__ import annotations

import html

from precmon.core.metric_keys import KEY
from precmon.report.analysis.concurrency import COLUMNS as CONCURRENCY_COLUMNS
from precmon.report.analysis.concurrency import FRONT_NOTE
from precmon.report.analysis.fit import COLUMNS as FIT_COLUMNS
from precmon.report.analysis.fit import FIT_NOTE
from precmon.report.fmt import NOISE_LEGEND, NOISE_MARK, format_value
from precmon.report.render.html.answers import answers_html, what_ran_html
from precmon.report.render.html.depthchart import depth_chart, depth_chart_note
from precmon.report.render.html.pareto import pareto_section
from precmon.report.sections import Report
from precmon.report.sparkline import sparkline
from precmon.report.table import WARN_MARK, ComparisonTable, Row
from precmon.untrusted import visible


def escape(text: object) -> str:
    """`text` safe in HTML text and attribute values; terminal escapes removed, controls shown."""
    return html.escape(visible(str(text)))


CSS = """
:root { color-scheme: light dark; --fg: #1b1f24; --muted: #57606a; --bar: #2f81f7; --best: #1a7f37;
        --bad: #cf222e; --line: #d0d7de; --bg: #ffffff; }
@media (prefers-color-scheme: dark) {
  :root { --fg: #e6edf3; --muted: #8d96a0; --bar: #4493f8; --best: #3fb950; --bad: #f85149;
          --line: #30363d; --bg: #0d1117; } }
body { font: 15px/1.45 system-ui, sans-serif; color: var(--fg); background: var(--bg);
       max-width: 1100px; margin: 2rem auto; padding: 0 1rem; }
h1 { font-size: 1.4rem; } h2 { font-size: 1.15rem; margin-top: 2rem; }
table { border-collapse: collapse; margin: 0.5rem 0; }
th, td { border: 1px solid var(--line); padding: 0.3rem 0.6rem; }
td.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
th small, .muted { color: var(--muted); font-weight: normal; }
.best { color: var(--best); font-weight: 600; } .failed { color: var(--bad); }
.ratio, .ci { color: var(--muted); margin-left: 0.3rem; } .spark { display: block; color: var(--muted); }
.charts { display: flex; flex-wrap: wrap; gap: 1.5rem; } figure { margin: 0; }
figcaption { font-weight: 600; margin-bottom: 0.3rem; }
svg text { fill: var(--fg); font: 12px system-ui, sans-serif; } svg rect { fill: var(--bar); }
"""

CHART_W, LABEL_W, BAR_H, GAP = 360, 90, 18, 6


def bar_chart(row: Row, labels: list[str]) -> str:
    """An inline SVG horizontal bar chart of one row (n/a values drawn as text, no bar)."""
    values = [c.value for c in row.cells]
    top = max((v for v in values if v is not None), default=0.0)
    height = len(values) * (BAR_H + GAP) + GAP
    span = CHART_W - LABEL_W - 70
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{CHART_W}" height="{height}" '
        f'viewBox="0 0 {CHART_W} {height}" role="img" '
        f'aria-label="{escape(row.label)} ({escape(row.unit)})">'
    ]
    for i, (label, cell) in enumerate(zip(labels, row.cells, strict=True)):
        y = GAP + i * (BAR_H + GAP)
        parts.append(f'<text x="{LABEL_W - 6}" y="{y + BAR_H - 5}" text-anchor="end">{escape(label)}</text>')
        if cell.value is None or top <= 0:
            parts.append(f'<text x="{LABEL_W}" y="{y + BAR_H - 5}">{escape(cell.text)}</text>')
            continue
        w = max(1.0, cell.value / top * span)
        parts.append(f'<rect x="{LABEL_W}" y="{y}" width="{w:.1f}" height="{BAR_H}" rx="2"/>')
        parts.append(f'<text x="{LABEL_W + w + 4:.1f}" y="{y + BAR_H - 5}">{escape(format_value(cell.value))}</text>')
    parts.append("</svg>")
    return "".join(parts)


def _chart_rows(table: ComparisonTable) -> list[Row]:
    # the largest prompt size that the most variants measured, as in the advice
    prefill = [
        (sum(c.value is not None for c in r.cells), i, r)
        for i, r in enumerate(table.rows)
        if r.key.metric == KEY.prefill_ms_per_token
    ]
    best = max((p for p in prefill if p[0] > 0), key=lambda p: p[:2], default=None)
    rows = [table.row(KEY.decode_tok_s), best[2] if best else None]
    rows += [table.row(KEY.power_decode_w), table.row(KEY.energy_decode_j_per_token)]
    return [r for r in rows if r is not None and any(c.value is not None for c in r.cells)]


def html_table(table: ComparisonTable) -> str:
    head = ["<th>Metric</th>"]
    for c in table.columns:
        sub = ", ".join(
            x for x in (c.precision, c.status if c.status != "ok" else "", "baseline" if c.is_baseline else "") if x
        )
        head.append(f"<th>{escape(c.label + c.mark)}<br><small>{escape(sub)}</small></th>")
    body = []
    for row in table.rows:
        best = row.best_index() if len(table.columns) > 1 else None
        tds = [f'<td>{escape(row.label)} <span class="muted">({escape(row.unit)})</span></td>']
        for i, cell in enumerate(row.cells):
            cls = "best" if i == best else ("failed" if cell.status == "failed" else "")
            inner = f'<span class="{cls}">{escape(cell.text)}</span>' if cls else escape(cell.text)
            if cell.spread:
                inner += f'<span class="ci">{escape(cell.spread)}</span>'
            if cell.ratio_text:
                mark = f' <span title="{escape(NOISE_LEGEND)}">{NOISE_MARK}</span>' if cell.noise else ""
                inner += f'<span class="ratio">{escape(cell.ratio_text)}{mark}</span>'
            if len(cell.series) > 1:
                inner += f'<span class="spark">{escape(sparkline(cell.series, 12))}</span>'
            tds.append(f'<td class="num">{inner}</td>')
        body.append("<tr>" + "".join(tds) + "</tr>")
    legend = f'<p class="muted">{escape(text)}.</p>' if (text := table.legend()) else ""
    legend += "".join(f'<p class="muted">{escape(note)}.</p>' for note in table.too_few_notes())
    return (
        f'<table id="comparison"><thead><tr>{"".join(head)}</tr></thead><tbody>{"".join(body)}</tbody></table>' + legend
    )


def _fingerprint_table(report: Report) -> str:
    """The compare section "Environment differences": one row per differing key ("" when none)."""
    if not report.fingerprint_diff:
        return ""
    head = "".join(f"<th>{escape(f)}</th>" for f in report.fingerprint_files)
    body = "".join(
        f"<tr><td>{escape(d.key)}</td>" + "".join(f"<td>{escape(v)}</td>" for v in d.values) + "</tr>"
        for d in report.fingerprint_diff
    )
    return (
        f'<h2>Environment differences</h2><table id="fingerprint"><thead><tr><th>key</th>{head}</tr></thead>'
        f"<tbody>{body}</tbody></table>"
    )


def _compare(report: Report) -> str:
    items = "".join(f"<li>{escape(line)}</li>" for line in report.description)
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>{escape(report.title)}</title><style>{CSS}</style></head><body>"
        f"<h1>{escape(report.title)}</h1><ul>{items}</ul>{html_table(report.table)}"
        f"{_fingerprint_table(report)}</body></html>\n"
    )


def _concurrency(report: Report) -> str:
    """The "Concurrency" section (report/analysis/concurrency.py); "" when no level was measured."""
    if not report.concurrency:
        return ""
    head = "".join(f"<th>{escape(c)}</th>" for c in CONCURRENCY_COLUMNS)
    body = []
    for row in report.concurrency:
        tds = [f"<td>{escape(c)}</td>" for c in row.cells[:2]]
        tds += [f'<td class="num">{escape(c)}</td>' for c in row.cells[2:-1]]
        cls = ' class="best"' if row.on_front else ""
        tds.append(f"<td><span{cls}>{escape(row.cells[-1])}</span></td>")
        body.append("<tr>" + "".join(tds) + "</tr>")
    return (
        f'<h2>Concurrency</h2><table id="concurrency"><thead><tr>{head}</tr></thead>'
        f'<tbody>{"".join(body)}</tbody></table><p class="muted">{escape(FRONT_NOTE)}</p>'
    )


def _fit(report: Report) -> str:
    """The "Memory fit" section (report/analysis/fit.py); "" when no variant has a fit."""
    if not report.fit:
        return ""
    head = "".join(f"<th>{escape(c)}</th>" for c in FIT_COLUMNS)
    body = "".join(
        "<tr>" + f"<td>{escape(r.cells[0])}</td>" + "".join(f'<td class="num">{escape(c)}</td>' for c in r.cells[1:])
        for r in report.fit
    )
    lines = "".join(f"<li>{escape(r.line)}</li>" for r in report.fit)
    return (
        f'<h2>Memory fit</h2><table id="fit"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'
        f'<ul class="muted">{lines}</ul><p class="muted">{escape(FIT_NOTE)}</p>'
    )


def render_html(report: Report) -> str:
    """A `Report` as one standalone HTML page."""
    if report.kind == "compare":
        return _compare(report)
    table = report.table
    title = f"precmon report: {report.title}"
    out = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{escape(title)}</title><style>{CSS}</style></head><body>",
        f"<h1>{escape(title)}</h1>",
    ]
    out += [f'<p class="muted">{escape(line)}</p>' for line in report.description]
    out.append(html_table(table))
    if report.pick:  # the pick within the quality budget
        out.append(f'<p id="pick"><b>{escape(report.pick)}</b></p>')
        out.append(pareto_section(report.doc, table, escape))  # quality vs speed / energy
    for c in report.failed:
        out.append(f'<p class="failed"><b>{escape(c.label)}</b> ({escape(c.status)}): {escape(c.error)}</p>')
    for label, w in table.warning_lines():
        out.append(f'<p class="warning" style="color:#a60">{WARN_MARK} <b>{escape(label)}</b>: {escape(w)}</p>')
    labels = [c.label for c in table.columns]
    charts = [
        f"<figure><figcaption>{escape(r.label)} ({escape(r.unit)}, {r.better} is better)</figcaption>"
        f"{bar_chart(r, labels)}</figure>"
        for r in _chart_rows(table)
    ]
    depth = depth_chart(report.doc, escape)
    if depth:
        charts.append(
            f"<figure><figcaption>Decode vs context depth (tok/s, higher is better)</figcaption>{depth}</figure>"
        )
    depth_note = depth_chart_note(report.doc)  # a depth measured, but no line: say why
    if charts or depth_note:
        out.append('<h2>Charts</h2><div class="charts">' + "".join(charts) + "</div>")
    if depth_note:
        out.append(f'<p class="muted" id="depth-note">{escape(depth_note)}</p>')
    out.append(_concurrency(report))
    out.append(_fit(report))
    out += [what_ran_html(report, escape), answers_html(report, escape)]
    out.append("<h2>Roofline</h2>")
    out += [f"<p>{escape(line)}</p>" for line in (report.roofline.lines() if report.roofline else [])]
    out += _advice(report) + _monthly_energy(report)
    out.append("</tbody></table><h2>Metric definitions</h2><dl>")
    out += [f"<dt><b>{escape(n)}</b></dt><dd>{escape(t)}</dd>" for n, t in report.definitions]
    out.append(
        f'</dl><p class="muted">Generated by precmon {escape(report.version)} '
        f"from {escape(report.schema or 'a results file')}.</p></body></html>"
    )
    return "\n".join(out) + "\n"


def _advice(report: Report) -> list[str]:
    """The advice section: per workload, the precision to choose and why."""
    out = ['<h2>Which precision for which workload</h2><ul id="advice">']
    for adv in report.advice:
        choice = f"<b>{escape(adv.choice)}</b>" if adv.choice else "<i>not measured</i>"
        item = f"<li><b>{escape(adv.title)}</b> ({escape(adv.priority)}): {choice}. {escape(adv.reason)}"
        if adv.caveat:
            item += f' <i class="muted">{escape(adv.caveat)}</i>'
        if adv.suggested:
            item += f' <span class="muted">(Guide suggests: {escape(adv.suggested)}.)</span>'
        out.append(item + "</li>")
    return out


def _monthly_energy(report: Report) -> list[str]:
    """The monthly energy table at decode load, open for the caller to close (its first line closes
    the advice list: the page keeps each closing tag on the line of the next heading)."""
    out = ["</ul><h2>Monthly energy at decode load</h2><table><thead><tr>"]
    out += [f"<th>{escape(c)}</th>" for c in report.energy_columns]
    out.append("</tr></thead><tbody>")
    for r in report.energy_rows:
        out.append(
            "<tr><td>" + escape(r[0]) + "</td>" + "".join(f'<td class="num">{escape(c)}</td>' for c in r[1:]) + "</tr>"
        )
    return out
