"""Rich renderables for the terminal: the comparison table and the full report under it.

Used by headless `precmon bench/sweep/report/compare`. Styles are plain Rich styles, so
`NO_COLOR` and dumb terminals degrade to text automatically.
"""

from __future__ import annotations

from typing import Any

from rich.console import Console, Group
from rich.table import Table
from rich.text import Text

from precmon.report.sparkline import sparkline
from precmon.report.table import ComparisonTable

SPARK_WIDTH = 12


def _header(col: Any) -> Text:
    text = Text(col.label, style="bold")
    sub = col.precision or ""
    if col.status == "failed":
        sub = "failed"
    elif col.status == "partial":
        sub = f"{sub} (partial)".strip()
    if col.is_baseline:
        sub = f"{sub} · baseline".strip(" ·")
    if sub:
        text.append(f"\n{sub}", style="red" if col.status == "failed" else "dim")
    return text


def rich_table(table: ComparisonTable, sparklines: bool = True, title: str | None = None) -> Table:
    """Render a `ComparisonTable`: value, ratio to the baseline and a per-run sparkline per cell."""
    out = Table(title=title, header_style="bold", show_lines=False, expand=False)
    out.add_column("Metric", no_wrap=True)
    for col in table.columns:
        out.add_column(_header(col), justify="right", no_wrap=True)
    for row in table.rows:
        best = row.best_index() if len(table.columns) > 1 else None
        cells: list[Text] = [Text.assemble(row.label, (f" ({row.unit})", "dim"))]
        for i, cell in enumerate(row.cells):
            style = "red" if cell.status == "failed" else ("dim" if cell.status == "missing" else "")
            if i == best:
                style = "bold green"
            text = Text(cell.text, style=style)
            if cell.ratio_text:
                text.append(f" {cell.ratio_text}", style="cyan")
            if sparklines and len(cell.series) > 1:
                text.append(f"\n{sparkline(cell.series, SPARK_WIDTH)}", style="dim")
            cells.append(text)
        out.add_row(*cells)
    failed = [c for c in table.columns if c.error]
    if failed:
        out.caption = "\n".join(f"{c.label}: {c.error}" for c in failed)
        out.caption_justify = "left"
    return out


def report_renderable(
    doc: dict[str, Any],
    baseline: str | None = None,
    hours_per_day: float | None = None,
    price_per_kwh: float | None = None,
    bandwidth_gbs: float | None = None,
) -> Group:
    """Table, roofline note, advice and monthly energy: everything `precmon report` prints."""
    from precmon.report.advice import advise
    from precmon.report.energy import monthly_energy_lines
    from precmon.report.roofline import roofline
    from precmon.report.table import build_table

    table = build_table(doc, baseline)
    parts: list[Any] = [rich_table(table, title=_title(doc))]
    roof = roofline(doc, bandwidth_gbs=bandwidth_gbs, baseline=baseline)
    parts.append(Text("\nRoofline", style="bold"))
    parts.extend(Text(f"  {line}") for line in roof.lines())
    parts.append(Text("\nWhich precision for which workload", style="bold"))
    for adv in advise(doc, baseline=baseline):
        line = Text("  ")
        line.append(f"{adv.title}: ", style="bold")
        line.append(adv.choice or "not measured", style="green" if adv.choice else "yellow")
        line.append(f" — {adv.reason}")
        if adv.caveat:
            line.append(f" {adv.caveat}", style="dim")
        parts.append(line)
    parts.append(Text("\nMonthly energy (decode load)", style="bold"))
    parts.extend(Text(f"  {line}") for line in monthly_energy_lines(doc, hours_per_day, price_per_kwh))
    return Group(*parts)


def _title(doc: dict[str, Any]) -> str:
    from precmon.report.markdown import title_of

    return title_of(doc)


def print_report(doc: dict[str, Any], console: Console | None = None, **options: Any) -> None:
    (console or Console()).print(report_renderable(doc, **options))
