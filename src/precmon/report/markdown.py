"""The Markdown report: GitHub-flavoured, ready to paste into a forum post or an issue.

Same content as the terminal report: the comparison table (value, ratio to the baseline, per-run
sparkline; the best value in bold), failed variants with their first error, the roofline note,
workload advice, monthly energy and the metric definitions.
"""

from __future__ import annotations

from typing import Any

from precmon.report.advice import advise
from precmon.report.energy import energy_columns, energy_rows, monthly_energy
from precmon.report.fmt import metric_definitions
from precmon.report.roofline import roofline
from precmon.report.sparkline import sparkline
from precmon.report.table import ComparisonTable, build_table

SPARK_WIDTH = 12


def _esc(text: str) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def title_of(doc: dict[str, Any]) -> str:
    host = doc.get("host") or {}
    gpus = ", ".join(str(g.get("name", "")) for g in host.get("gpus") or [] if isinstance(g, dict))
    parts = [str(host.get("hostname") or "unknown host"), gpus or "CPU", str(doc.get("created") or "")[:10]]
    return " · ".join(p for p in parts if p)


def describe_run(doc: dict[str, Any]) -> list[str]:
    """Short lines on what was measured and how (settings, servers, power sources)."""
    s = doc.get("settings") or {}
    lines = []
    bits = []
    if s.get("output_tokens"):
        bits.append(f"{s['output_tokens']} output tokens")
    if s.get("decode_prompt_tokens"):
        bits.append(f"{s['decode_prompt_tokens']}-token decode prompt")
    if s.get("repeats"):
        bits.append(f"median of {s['repeats']} repeats")
    if s.get("warmup") is not None:
        bits.append(f"{s['warmup']} warm-up")
    if bits:
        lines.append("Settings: " + ", ".join(bits) + ".")
    servers = []
    for v in doc.get("variants") or []:
        srv = v.get("server") if isinstance(v, dict) and isinstance(v.get("server"), dict) else {}
        name = " ".join(str(x) for x in (srv.get("kind"), srv.get("version")) if x)
        if name and name not in servers:
            servers.append(name)
    if servers:
        lines.append("Server: " + ", ".join(servers) + ".")
    sources = [
        f"{p.get('id')} ({p.get('scope')})"
        for p in (doc.get("host") or {}).get("power_sources") or []
        if isinstance(p, dict) and p.get("id")
    ]
    lines.append("Power: " + (", ".join(sources) if sources else "no power source") + ".")
    return lines


def markdown_table(table: ComparisonTable, sparklines: bool = True) -> str:
    """The comparison table alone as a GitHub-flavoured Markdown table (also used by compare)."""
    head = ["Metric"]
    for c in table.columns:
        sub = [c.precision or ""] if c.precision else []
        if c.status != "ok":
            sub.append(c.status)
        if c.is_baseline:
            sub.append("baseline")
        head.append(_esc(c.label + (f" ({', '.join(sub)})" if sub else "")))
    lines = ["| " + " | ".join(head) + " |", "| --- |" + " ---: |" * len(table.columns)]
    for row in table.rows:
        best = row.best_index() if len(table.columns) > 1 else None
        cells = [_esc(f"{row.label} ({row.unit})")]
        for i, cell in enumerate(row.cells):
            text = f"**{cell.text}**" if i == best else cell.text
            if cell.ratio_text:
                text += f" ({cell.ratio_text})"
            if sparklines and len(cell.series) > 1:
                text += " " + sparkline(cell.series, SPARK_WIDTH)
            cells.append(_esc(text))
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def failures(table: ComparisonTable) -> list[str]:
    return [f"**{_esc(c.label)}** ({c.status}): {_esc(c.error or '')}" for c in table.columns if c.error]


def to_markdown(
    doc: dict[str, Any],
    baseline: str | None = None,
    hours_per_day: float | None = None,
    price_per_kwh: float | None = None,
    bandwidth_gbs: float | None = None,
) -> str:
    """The full report as Markdown (see the module docstring)."""
    table = build_table(doc, baseline)
    out = [f"# precmon report: {_esc(title_of(doc))}", ""]
    out += [" ".join(describe_run(doc)), ""]
    out.append(markdown_table(table))
    base = table.baseline
    if base is not None:
        out.append(
            f"Ratios against **{_esc(base.label)}**: speed rows in × faster (for ms/token and s, "
            "baseline ÷ value), power, energy and memory as the change. Best value in bold; "
            "sparklines show the individual runs."
        )
        out.append("")
    fails = failures(table)
    if fails:
        out += [f"- {f}" for f in fails] + [""]
    roof = roofline(doc, bandwidth_gbs, baseline)
    out += ["## Roofline", ""] + [f"- {line}" for line in roof.lines()] + [""]
    out += ["## Which precision for which workload", ""]
    for adv in advise(doc, baseline):
        choice = f"**{_esc(adv.choice)}**" if adv.choice else "_not measured_"
        line = f"- **{adv.title}** ({adv.priority}): {choice}. {_esc(adv.reason)}"
        if adv.caveat:
            line += f" _{_esc(adv.caveat)}_"
        if adv.suggested:
            line += f" (Guide suggests: {adv.suggested}.)"
        out.append(line)
    out.append("")
    cols = energy_columns(hours_per_day, price_per_kwh)
    rows = energy_rows(monthly_energy(doc, hours_per_day, price_per_kwh))
    out += [
        "## Monthly energy at decode load",
        "",
        "| " + " | ".join(cols) + " |",
        "| --- |" + " ---: |" * (len(cols) - 1),
    ]
    out += ["| " + " | ".join(_esc(c) for c in r) + " |" for r in rows]
    out += ["", "## Metric definitions", ""]
    out += [f"- **{name}**: {text}" for name, text in metric_definitions()]
    out += [
        "",
        f"_Generated by precmon {doc.get('precmon_version') or ''} from {doc.get('schema') or 'a results file'}._",
        "",
    ]
    return "\n".join(out)
