"""The Sweep table (docs/design.md §7): metric rows × variant columns, filling in cell by cell.

The model is `precmon.report.table.build_table(doc)`, the same one the terminal, Markdown and
HTML reports render, so the TUI never disagrees with an export. While a variant is being
measured its median does not exist yet; its cells then show the newest landed run, marked "~"
and dim, beside the sparkline of the runs so far, until `VariantFinished` brings the medians.
A ratio inside the run-to-run noise (its 95% CI overlaps the baseline's) is marked `NOISE_MARK`
(after it in the wide layout, in place of the space before it in the narrow one, "0.450≈1.11×");
the wide layout (sparklines of `CI_SPARK_WIDTH` or more) also shows "±" half the CI.

When the variants outgrow the width, `fit_table` gives up, in turn, whole labels, the sparklines,
a few more of the labels' cells and the "±" (`layouts`) before any column; columns that still do
not fit are named in the top border ("Sweep · 2 more columns → (scroll)"), never cut silently.
"""

from __future__ import annotations

from itertools import accumulate

from rich.console import Console
from rich.measure import Measurement
from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.containers import ScrollableContainer
from textual.reactive import reactive
from textual.timer import Timer
from textual.widgets import Static

from precmon.core.schema import ResultsDoc
from precmon.report.analysis.pick import budget, pick_line
from precmon.report.fmt import NOISE_MARK, format_value
from precmon.report.sparkline import sparkline
from precmon.report.table import WARN_MARK, Cell, Column, ComparisonTable, build_table, header_label, short_label
from precmon.tui.live import PENDING, RUNNING, UNSAVED
from precmon.untrusted import markup, visible

#: The narrow layout (3-cell sparklines, 80 columns) has no room for "±"; the wide one (8) has.
CI_SPARK_WIDTH = 8
#: Metric labels are cut to this many cells only when the whole table would not fit.
LABEL_CUT = 26
#: ... and to this many before the "±" goes (an interval shown as a range, "0.012–0.17", is wider).
LABEL_CUT_TIGHT = 22
UNBOUNDED = 10_000  # cells: measuring a table at this width gives its natural width
TABLE_BATCH_S = 0.25  # documents that come within this long of each other are drawn in one repaint


def _header(col: Column) -> Text:
    text = Text(header_label(col.label), style="bold")
    if col.warnings:  # measured, but perhaps disturbed (docs/design.md §4 "Trust"); the line says why
        text.append(col.mark, style="bold yellow")
    if col.status == RUNNING:
        sub, style = "measuring…", "bold yellow"
    elif col.status == PENDING:
        sub, style = "pending", "dim italic"
    elif col.status == "failed":
        sub, style = "✗ failed", "bold red"
    else:
        sub = short_label(col.precision or "") + (" (partial)" if col.status == "partial" else "")
        sub, style = (sub + (" · base" if col.is_baseline else "")).strip(" ·"), "dim"
    text.append(f"\n{sub}", style=style)
    return text


def render_table(
    table: ComparisonTable, spark_width: int = 6, label_max: int | None = None, ci: bool | None = None
) -> Table | Text:
    """A rich Table of the model: value, ratio to the baseline and a per-run sparkline per cell.

    Args:
        label_max: cut metric labels at this many cells (None: whole). The widget cuts them only
            when the whole table would not fit its width ("Prefill (512 prompt) ms/t…" was cut at
            26 with half the screen empty).
        ci: show "±" half the CI beside each value (None: when the sparklines are `CI_SPARK_WIDTH`
            or wider, the wide layout).
    """
    if not table.columns:
        return Text("No results yet: press b to bench the server, s to start a sweep.", style="dim")
    out = Table(header_style="bold", box=None, padding=(0, 1), show_edge=False, expand=False)
    wide = spark_width >= CI_SPARK_WIDTH if ci is None else ci
    out.add_column("Metric", no_wrap=True, max_width=label_max, overflow="ellipsis")
    for col in table.columns:
        out.add_column(_header(col), justify="right", no_wrap=True)
    for row in table.rows:
        best = row.best_index() if sum(c.status == "ok" for c in row.cells) > 1 else None
        cells: list[Text] = [Text.assemble(row.label, " ", (row.unit, "dim"))]
        for i, (col, cell) in enumerate(zip(table.columns, row.cells, strict=True)):
            if col.status == PENDING:
                text = Text("·", style="dim")
            elif col.status == RUNNING and cell.value is None:
                text = (
                    Text(f"~{format_value(cell.series[-1])}", style="dim italic")
                    if cell.series
                    else Text("…", style="dim")
                )
            else:
                text = _measured(cell, best=i == best, wide=wide)
            if spark_width and len(cell.series) > 1:
                text.append(" ")
                text.append(sparkline(cell.series, spark_width), style="green")
            cells.append(text)
        out.add_row(*cells)
    notes = [
        f"{visible(c.label)}: {visible(c.error)}"
        for c in table.columns
        if c.status in ("failed", "partial") and c.error
    ] + [  # the codes only: the panel is small, the lines are in the exports (`e`)
        f"{WARN_MARK} {visible(c.label)}: {', '.join(dict.fromkeys(visible(w.split(':', 1)[0]) for w in c.warnings))}"
        for c in table.warned
    ]
    if notes:
        out.caption = Text("\n".join(notes))  # a Text: a str caption would be parsed as markup
        out.caption_justify = "left"
        out.caption_style = "red"
    return out


def _measured(cell: Cell, best: bool, wide: bool) -> Text:
    """A measured cell's text: its value (marked when the row's best), the CI's half width where
    `wide`, and the ratio to the baseline with the noise mark."""
    style = {"failed": "red", "missing": "dim"}.get(cell.status, "")
    text = Text(cell.text, style="bold green" if best else style)
    if best:
        text.append("*", style="green")  # "best" without colour (NO_COLOR)
    if cell.spread and wide:  # "±5.2", or "n=2: no CI" where too few runs for one
        text.append(f" {cell.spread}", style="dim")
    if cell.ratio_text:
        # narrow: the mark takes the place of the space before the ratio, so the
        # table keeps its width at 80 columns
        narrow_mark = cell.noise and not wide
        text.append(NOISE_MARK if narrow_mark else " ", style="yellow")
        text.append(cell.ratio_text, style="cyan")
        if cell.noise and wide:
            text.append(f" {NOISE_MARK}", style="yellow")
    return text


class SweepTable(ScrollableContainer):
    """Scrolls (arrows, PgUp/PgDn, Home/End) when variants outgrow the terminal.

    `doc` is bound to the app's live results document; a new one is drawn `TABLE_BATCH_S` after
    it came, so a fast stream of landed runs costs one repaint. `narrow` (bound): 80 columns,
    3-cell sparklines and no "±"."""

    BORDER_TITLE = "Sweep"
    doc: reactive[ResultsDoc | None] = reactive(None, always_update=True)
    narrow: reactive[bool] = reactive(False)

    _due: Timer | None = None  # the repaint of a new document, while one is pending

    @property
    def spark_width(self) -> int:
        return 3 if self.narrow else 8

    def compose(self) -> ComposeResult:
        yield Static(id="sweep-grid")

    def watch_doc(self, doc: ResultsDoc | None) -> None:
        if self._due is None:
            self._due = self.set_timer(TABLE_BATCH_S, self._repaint)

    def _repaint(self) -> None:
        self._due = None
        self._paint()

    def watch_narrow(self, _: bool) -> None:
        self._paint()

    def on_resize(self) -> None:
        self._paint()  # whether the labels must be cut depends on the width

    def _paint(self) -> None:
        if not self.is_mounted:
            return
        doc = self.doc or ResultsDoc()
        table = build_table(doc)
        grid, hidden = fit_table(table, self.spark_width, self.content_size.width, self.app.console)
        self.query_one("#sweep-grid", Static).update(grid)
        # the top border: the bottom one (and the horizontal scrollbar) is below the screen when
        # the table is taller than it, and a cut there would be silent
        self.border_title = f"Sweep · {hidden} more column{'s' if hidden > 1 else ''} → (scroll)" if hidden else "Sweep"
        pick = pick_short(doc, table)
        self.border_subtitle = _subtitle(table) + (f" · {markup(pick)}" if pick else "")


def pick_short(doc: ResultsDoc, table: ComparisonTable) -> str:
    """The pick (report/analysis/pick.py) in a few words for the table's bottom border, within the
    document's `settings.max_kld` (the sweep's budget: `--max-kld`, the sweep file's `max_kld`) or
    the default; "" without quality. The whole line (the others within, J/token) is in the exports
    (`e`): a caption line would push the power panel off a 24-line screen."""
    return pick_line(doc, table, budget(doc)).short


def layouts(spark_width: int) -> list[tuple[int, int | None, bool]]:
    """(sparkline width, label cut, "±") from the richest to the leanest: whole labels; labels cut
    at `LABEL_CUT`; then without sparklines (a 3-run sparkline says less than a CI); labels cut at
    `LABEL_CUT_TIGHT` (a label's unit says less than its interval); then without ±."""
    ci = spark_width >= CI_SPARK_WIDTH
    steps = [
        (spark_width, None, ci),
        (spark_width, LABEL_CUT, ci),
        (0, LABEL_CUT, ci),
        (0, LABEL_CUT_TIGHT if ci else LABEL_CUT, ci),  # without "±" the labels keep their cells
        (0, LABEL_CUT, False),
    ]
    return list(dict.fromkeys(steps))


def column_widths(grid: Table, console: Console) -> list[int]:
    """Each column's natural width in cells (padding included): what it takes not to wrap or cut."""
    options = console.options.update_width(UNBOUNDED)  # not the console's width: it may be narrower
    widths = []
    for col in grid.columns:
        cells = [col.header, *col.cells]
        content = max(Measurement.get(console, options, c).maximum for c in cells)
        if col.max_width is not None:
            content = min(content, col.max_width)
        widths.append(content + 2)  # padding (0, 1)
    return widths


def fit_table(table: ComparisonTable, spark_width: int, room: int, console: Console) -> tuple[Table | Text, int]:
    """The richest layout of `table` whose columns all fit `room` cells, and how many variant
    columns are still cut (0 when one fits; the leanest layout then, the cut said by the caller)."""
    grid: Table | Text = Text()
    for spark, label_max, ci in layouts(spark_width):
        grid = render_table(table, spark, label_max, ci)
        if not isinstance(grid, Table) or not room:
            return grid, 0
        edges = list(accumulate(column_widths(grid, console)))
        if edges[-1] <= room:
            return grid, 0
    return grid, sum(edge > room for edge in edges)


def _subtitle(table: ComparisonTable) -> str:
    if not table.columns:
        return ""
    base = table.baseline
    done = sum(c.status not in UNSAVED for c in table.columns)
    # a border subtitle is markup: the label is escaped ("F16 [/]" once crashed the TUI)
    noise = f" · {NOISE_MARK} in noise" if any(c.noise for r in table.rows for c in r.cells) else ""
    return f"{done}/{len(table.columns)} variants · ratios vs {markup(base.label) if base else '—'} · * best{noise}"
