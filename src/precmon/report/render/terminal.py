"""Rich renderables for the terminal: the comparison table and the full report under it.

Used by headless `precmon bench/sweep/report/compare`. Styles are plain Rich styles, so
`NO_COLOR` and dumb terminals degrade to text automatically. Every string from a results file
reaches rich as a `Text` (never parsed as markup) after `precmon.untrusted.visible`, so a label
`F16 [/]` prints as typed and an ANSI escape in an error never reaches the terminal.

A table wider than the terminal keeps the columns that fit, readable, and says where the whole
table is (`--format md` or `--format csv`), instead of squeezing every cell to "…". A comparison's
headers ("host · GPU · label · date") drop the parts every column shares and the title says them
once, so a narrow header keeps the part that tells the columns apart.
"""

from __future__ import annotations

import dataclasses
from typing import IO, Any

from rich.console import Console, ConsoleOptions, Group, RenderResult
from rich.measure import Measurement
from rich.table import Table
from rich.text import Text

from precmon.core.schema import ResultsDoc
from precmon.report.analysis.answers import Answers, RanRow
from precmon.report.analysis.concurrency import COLUMNS as CONCURRENCY_COLUMNS
from precmon.report.analysis.concurrency import FRONT_NOTE
from precmon.report.analysis.fit import COLUMNS as FIT_COLUMNS
from precmon.report.analysis.fit import FIT_NOTE
from precmon.report.analysis.pick import budget, pick_line
from precmon.report.fmt import NA, NOISE_MARK
from precmon.report.sections import Report, build_compare, build_report
from precmon.report.sparkline import sparkline
from precmon.report.table import WARN_MARK, Column, ComparisonTable, build_table, header_label, short_label
from precmon.untrusted import visible

SPARK_WIDTH = 12


def _header(col: Column, label: str | None = None, width: int | None = None) -> Text:
    name = col.label if label is None else label
    text = Text(header_label(name, width, lines=4) if width else header_label(name), style="bold")
    if col.warnings:
        text.append(col.mark, style="bold yellow")
    sub = short_label(col.precision or "")
    if col.status == "failed":
        sub = "failed"
    elif col.status == "partial":
        sub = f"{sub} (partial)".strip()
    if col.is_baseline:
        sub = f"{sub} · baseline".strip(" ·")
    if sub:
        text.append(f"\n{sub}", style="red" if col.status == "failed" else "dim")
    return text


SEP = " · "
#: Where the table does not fit, the metric names and a cell's second line (its spread and
#: sparkline) are cut, never a value and its ratio: a column is as wide as its widest first line
#: (its header wrapped to it, at least HEADER_MIN), the metric column at least METRIC_MIN.
METRIC_MIN = 18
HEADER_MIN = 12
CELL_EDGES = 3  # a column's padding and border
NATURAL_WIDTH = 100_000  # wide enough that nothing is squeezed: a table's natural width is measured


def _value_width(table: ComparisonTable, i: int) -> int:
    """The widest first line of column `i`: value, ratio and noise mark."""
    widths = [len(c.text) + (len(c.ratio_text) + 1 if c.ratio_text else 0) + (2 if c.noise else 0)
              for r in table.rows for c in r.cells[i : i + 1]]  # fmt: skip
    return max(widths, default=len(NA))


def distinct_parts(labels: list[str]) -> tuple[list[str], list[str]]:
    """(each "a · b · c" label without the parts every label shares, the shared parts): "vm · CPU ·
    F16 · 2026-11-29" and "vm · CPU · F16 · 2026-12-05" become "F16 · 2026-11-29", "F16 ·
    2026-12-05" and ["vm", "CPU"]. Labels of unequal shape, or a single one, stay as they are."""
    split = [label.split(SEP) for label in labels]
    if len(split) < 2 or len({len(s) for s in split}) != 1:
        return labels, []
    n = len(split[0])
    shared = [i for i in range(n) if len({s[i] for s in split}) == 1][: n - 1]  # one part always stays
    keep = [i for i in range(n) if i not in shared]
    return [SEP.join(s[i] for i in keep) for s in split], [split[0][i] for i in shared]


class FittedTable:
    """A comparison table that fits the console: drawn as it is where it fits; else each column
    as wide as its values (its header wrapped to that width, its second line cut), as many columns
    as fit, and a line naming the formats that hold them all when some are left out."""

    def __init__(
        self, table: ComparisonTable, sparklines: bool = True, title: str | None = None, distinct: bool = False
    ):
        self.table, self.sparklines, self.title, self.distinct = table, sparklines, title, distinct

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        n, room = len(self.table.columns), options.max_width
        whole = self._render(n)
        if Measurement.get(console, options.update_width(NATURAL_WIDTH), whole).maximum <= room:
            yield whole
            return
        widths = [max(_value_width(self.table, i), HEADER_MIN) for i in range(n)]
        shown = n
        while shown > 1 and _drawn(METRIC_MIN, widths[:shown]) > room:
            shown -= 1
        metric = max(METRIC_MIN, room - _drawn(0, widths[:shown]))
        yield self._render(shown, widths[:shown], min(metric, self._metric_natural()))
        if shown < n:
            yield Text(
                f"showing {shown} of {n} columns: the others do not fit in {room} characters; "
                "every column: --format md or --format csv (with --out FILE)",
                style="yellow",
            )

    def __rich_measure__(self, console: Console, options: ConsoleOptions) -> Measurement:
        return Measurement.get(console, options, self._render(len(self.table.columns)))

    def _metric_natural(self) -> int:
        return max((len(visible(r.label)) + len(visible(r.unit)) + 3 for r in self.table.rows), default=METRIC_MIN)

    def _render(self, shown: int, widths: list[int] | None = None, metric: int | None = None) -> Table:
        t = self.table
        if shown < len(t.columns):
            rows = tuple(dataclasses.replace(r, cells=r.cells[:shown]) for r in t.rows)
            base = t.baseline_index if t.baseline_index is not None and t.baseline_index < shown else None
            t = dataclasses.replace(t, columns=t.columns[:shown], rows=rows, baseline_index=base)
        labels, shared = distinct_parts([c.label for c in self.table.columns]) if self.distinct else ([], [])
        title = self.title
        if shared and title is not None:
            title = f"{title}: {SEP.join(shared)} in every column"
        return _rich_table(t, self.sparklines, title, labels[:shown] or None, widths, metric)


def _drawn(metric: int, widths: list[int]) -> int:
    """The characters a table of these column widths takes: each column's padding and border."""
    return metric + sum(widths) + CELL_EDGES * (len(widths) + 1) + 1


def rich_table(
    table: ComparisonTable, sparklines: bool = True, title: str | None = None, distinct: bool = False
) -> FittedTable:
    """Render a `ComparisonTable`: value, ratio to the baseline and a per-run sparkline per cell,
    as many columns as the console fits (`FittedTable`); `distinct`: headers without the parts
    every column shares (a comparison's)."""
    return FittedTable(table, sparklines, title, distinct)


def _rich_table(
    table: ComparisonTable,
    sparklines: bool = True,
    title: str | None = None,
    labels: list[str] | None = None,
    widths: list[int] | None = None,
    metric_width: int | None = None,
) -> Table:
    out = Table(
        title=Text(visible(title), style="table.title") if title is not None else None,
        header_style="bold",
        show_lines=False,
        expand=False,
    )
    out.add_column("Metric", no_wrap=True, width=metric_width)
    for i, col in enumerate(table.columns):
        width = widths[i] if widths else None
        header = _header(col, labels[i] if labels else None, width)
        out.add_column(header, justify="right", no_wrap=True, width=width)
    for row in table.rows:
        best = row.best_index() if len(table.columns) > 1 else None
        cells: list[Text] = [Text.assemble(visible(row.label), (f" ({visible(row.unit)})", "dim"))]
        for i, cell in enumerate(row.cells):
            style = "red" if cell.status == "failed" else ("dim" if cell.status == "missing" else "")
            if i == best:
                style = "bold green"
            text = Text(cell.text, style=style)
            if cell.ratio_text:
                text.append(f" {cell.ratio_text}", style="cyan")
            if cell.noise:
                text.append(f" {NOISE_MARK}", style="yellow")
            # the second line holds the spread: ± and the runs' sparkline (the first stays narrow)
            second = [cell.spread] if cell.spread else []
            if sparklines and len(cell.series) > 1:
                second.append(sparkline(cell.series, SPARK_WIDTH))
            if second:
                text.append("\n" + " ".join(second), style="dim")
            cells.append(text)
        out.add_row(*cells)
    notes = [f"{visible(c.label)}: {visible(c.error or '')}" for c in table.columns if c.error]
    notes += [f"{WARN_MARK} {visible(label)}: {visible(w)}" for label, w in table.warning_lines()]
    if legend := table.legend():
        notes.append(legend)
    notes += table.too_few_notes()
    if notes:
        out.caption = Text("\n".join(notes), style="table.caption")
        out.caption_justify = "left"
    return out


def to_rich_table(doc: ResultsDoc, baseline: str | None = None, sparklines: bool = True) -> FittedTable:
    """The comparison table of a results document for the terminal (headless bench/sweep)."""
    return rich_table(build_table(doc, baseline), sparklines=sparklines)


def table_and_pick(doc: ResultsDoc) -> Group:
    """The comparison table with the pick line under it, as `precmon report` shows them, within the
    document's `settings.max_kld`: how a headless sweep and `precmon demo --headless` end."""
    table = build_table(doc)
    parts: list[Any] = [rich_table(table)]
    pick = pick_line(doc, table, budget(doc)).line
    if pick:
        parts.append(Text(visible(pick), style="bold"))
    return Group(*parts)


def render_terminal(report: Report) -> Group:
    """A `Report` for the terminal: table, roofline note, advice and monthly energy."""
    if report.kind == "compare":
        return Group(rich_table(report.table, title=report.title, distinct=True), *_fingerprint_diff(report))
    parts: list[Any] = [rich_table(report.table, title=report.title)]
    if report.pick:  # the pick within the quality budget
        parts.append(Text(visible(report.pick), style="bold"))
    parts.extend(_concurrency(report))
    parts.extend(_fit(report))
    if report.ran:
        parts += [Text(""), what_ran_table(report.ran)]
    if report.answers is not None:
        parts += [Text(""), answers_table(report.answers)]
    parts.append(Text("\nRoofline", style="bold"))
    parts.extend(Text(f"  {visible(line)}") for line in (report.roofline.lines() if report.roofline else []))
    parts.append(Text("\nWhich precision for which workload", style="bold"))
    for adv in report.advice:
        line = Text("  ")
        line.append(f"{visible(adv.title)}: ", style="bold")
        line.append(visible(adv.choice or "not measured"), style="green" if adv.choice else "yellow")
        line.append(f" — {visible(adv.reason)}")
        if adv.caveat:
            line.append(f" {visible(adv.caveat)}", style="dim")
        parts.append(line)
    parts.append(Text("\nMonthly energy (decode load)", style="bold"))
    parts.extend(Text(f"  {visible(line)}") for line in report.energy_lines)
    return Group(*parts)


def _concurrency(report: Report) -> list[Any]:
    """The "Concurrency" section (report/analysis/concurrency.py); nothing when no level was measured."""
    if not report.concurrency:
        return []
    table = Table(title="Concurrency", title_justify="left", caption=Text(FRONT_NOTE), caption_justify="left")
    for i, name in enumerate(CONCURRENCY_COLUMNS):
        table.add_column(name, justify="right" if 1 < i < len(CONCURRENCY_COLUMNS) - 1 else "left")
    for row in report.concurrency:
        cells = [Text(visible(c)) for c in row.cells]
        if row.on_front:
            cells[-1].stylize("bold green")
        if row.queued:
            cells[1].stylize("yellow")
        table.add_row(*cells)
    return [Text(""), table]


def _fit(report: Report) -> list[Any]:
    """The "Memory fit" section (report/analysis/fit.py); nothing when no variant has a fit."""
    if not report.fit:
        return []
    notes = "\n".join([*(row.line for row in report.fit), FIT_NOTE])
    table = Table(title="Memory fit", title_justify="left", caption=Text(notes), caption_justify="left")
    for i, name in enumerate(FIT_COLUMNS):
        table.add_column(name, justify="right" if i else "left")
    for row in report.fit:
        table.add_row(*(Text(visible(c)) for c in row.cells))
    return [Text(""), table]


def what_ran_table(ran: tuple[RanRow, ...]) -> Table:
    """The "What ran" section (report/analysis/answers.py): weights and kernels per variant
    (also the TUI's answers view)."""
    table = Table(title="What ran", title_justify="left")
    for name in ("Variant", "Weights (share of bytes)", "bpw", "Compute path"):
        table.add_column(name, justify="right" if name == "bpw" else "left", overflow="fold")
    for r in ran:
        compute = Text(visible(r.compute), style="yellow" if r.fallback else "")
        table.add_row(Text(visible(r.label)), Text(visible(r.weights)), Text(r.bits_per_weight), compute)
    return table


def answers_table(a: Answers) -> Table:
    """The "Answers" section: each variant's answer to the fixed question and where it parts
    from the baseline's (also the TUI's answers view)."""
    table = Table(
        title=f"Answers to “{visible(a.prompt)}”", title_justify="left", caption=Text(visible(a.note)), expand=True
    )
    table.caption_justify = "left"
    table.add_column("Variant", no_wrap=True)
    table.add_column("Answer", overflow="fold", ratio=1)
    for r in a.rows:
        label = Text(visible(r.label), style="bold")
        answer = Text(visible(r.text))
        if r.parts:
            answer.append(f"  ({r.parts})", style="dim" if r.parts.startswith("same") else "yellow")
        elif r.is_baseline:
            answer.append("  (baseline)", style="dim")
        table.add_row(label, answer)
    return table


def _fingerprint_diff(report: Report) -> list[Any]:
    """The compare section "Environment differences" (nothing when the files agree)."""
    if not report.fingerprint_diff:
        return []
    table = Table(title="Environment differences", title_justify="left")
    table.add_column("key")
    for name in report.fingerprint_files:
        table.add_column(Text(visible(name, limit=60)))
    for d in report.fingerprint_diff:
        table.add_row(Text(visible(d.key)), *(Text(visible(v)) for v in d.values))
    return [table]


def report_renderable(doc: ResultsDoc, **options: Any) -> Group:
    """Everything `precmon report` prints for `doc` (options as `sections.build_report`)."""
    return render_terminal(build_report(doc, **options))


#: The width a table is drawn at when written to a file or a pipe: wide enough for five variants'
#: cells uncut, so a table posted from a log loses nothing (Rich's default there is 80 columns).
PIPE_WIDTH = 200


def table_console(file: IO[str] | None = None, stderr: bool = False) -> Console:
    """A console for the comparison table: a terminal's own width (a cell Rich cuts there ends in
    "…"), and `PIPE_WIDTH` written to a file or pipe."""
    probe = Console(file=file, stderr=stderr)
    return probe if probe.is_terminal else Console(file=file, stderr=stderr, width=PIPE_WIDTH)


def print_report(doc: ResultsDoc, console: Console | None = None, **options: Any) -> None:
    (console or table_console()).print(report_renderable(doc, **options))


def print_compare(docs: list[ResultsDoc], console: Console | None = None) -> None:
    (console or table_console()).print(render_terminal(build_compare(docs)))
