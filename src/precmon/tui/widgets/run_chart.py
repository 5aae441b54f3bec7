"""The run chart: per-second tok/s and W of the variant being measured, as multi-row bar charts.

Shown under the sweep table while a bench or sweep runs, when the terminal has the height
(the app shows it from `MIN_ROWS` rows: 80×24 keeps the table and panels whole). Each chart is
`BAR_ROWS` rows of eighth blocks, one column a second, newest at the right, scaled to its own
peak, and names where its numbers come from (`precmon.tui.run_trace`). Drawn from styled pieces
of text made into strips once per view and size (no Rich `Text` to render on each repaint).
"""

from __future__ import annotations

import itertools
import textwrap
from collections.abc import Sequence
from typing import Any

from rich.cells import cell_len
from textual.geometry import Size
from textual.reactive import reactive
from textual.strip import Strip
from textual.widget import Widget

from precmon.report.fmt import format_value
from precmon.tui.run_trace import TraceView
from precmon.tui.widgets.pieces import Line, StripMaker, fit
from precmon.untrusted import markup, visible

BAR_ROWS = 4
MIN_ROWS = 40  # terminal rows from which the chart is shown
SIDE_BY_SIDE_COLS = 96  # content width from which the two charts sit side by side
EIGHTHS = " ▁▂▃▄▅▆▇█"


def bar_rows(values: Sequence[float | None], width: int, rows: int = BAR_ROWS) -> list[str]:
    """The last `width` values as `rows` lines of eighth blocks (top line first), right-aligned.

    Scaled to the peak of what is shown; 0 draws nothing, a reading missing that second draws
    "·" on the bottom line, so "idle" and "no reading" look different.
    """
    shown = list(values)[-width:] if width > 0 else []
    peak = max((v for v in shown if v is not None), default=0.0)
    pad = " " * (width - len(shown))
    scale = rows * 8 / peak if peak > 0 else 0.0
    empty, missing = " " * rows, " " * (rows - 1) + "·"
    columns = []  # each column top to bottom, then read across by row
    for v in shown:
        if v is None:
            columns.append(missing)
            continue
        level = min(rows * 8, round(v * scale)) if v > 0 else 0
        if v > 0 and level == 0:
            level = 1  # a trickle still shows
        full, part = divmod(level, 8)
        bar = "█" * full + (EIGHTHS[part] if part else "")
        columns.append(empty[len(bar) :] + bar[::-1] if bar else empty)
    return [pad + "".join(row) for row in zip(*columns, strict=True)] if columns else [pad] * rows


def _chart(
    title: str, unit: str, values: Sequence[float | None], source: str, width: int, style: str, rows: int
) -> list[Line]:
    """One chart as lines of at most `width` cells: its title, `rows` bar rows, its source folded."""
    numbers = [v for v in values if v is not None]
    head: Line = [(title, "bold")]
    if numbers:
        now = next((v for v in reversed(values) if v is not None), None)
        head.append((f"  now {format_value(now)} {unit}", "bold"))
        head.append((f" · peak {format_value(max(numbers))} · {len(values[-width:])} s", "dim"))
    bars: list[Line] = [[(line, style)] for line in bar_rows(values, width, rows)]
    folded = textwrap.wrap(visible(source), width, break_on_hyphens=False) or [""]
    # a wide character can still overrun a folded line: cropped, never wrapped again
    sources = [fit([(line, "dim")], width) for line in folded]
    return [fit(head, width, ellipsis=True), *bars, *sources]


def chart_lines(view: TraceView, width: int, height: int = BAR_ROWS + 3) -> list[Line]:
    """Both charts in `width` × `height` cells, as lines of styled pieces: side by side from
    `SIDE_BY_SIDE_COLS` columns, each with as many bar rows as the height leaves (at least
    `BAR_ROWS`); stacked below that width."""
    side = width >= SIDE_BY_SIDE_COLS
    col = (width - 3) // 2 if side else width
    # a title line and two lines of source under the bars (a long source folds onto the second)
    rows = max(BAR_ROWS, height - 3) if side else BAR_ROWS
    tok = _chart("decode tok/s", "tok/s", view.tok_s, view.tok_source, col, "green", rows)
    watts = _chart("power", "W", view.watts, view.watts_source, col, "yellow", rows)
    if not side:
        return [*tok, *watts]
    lines: list[Line] = []
    empty: Line = []
    for left, right in itertools.zip_longest(tok, watts, fillvalue=empty):
        pad = col - sum(cell_len(text) for text, _ in left)
        lines.append([*left, (" " * pad + GAP, ""), *right])
    return lines


GAP = " " * 3  # between the two charts side by side


class RunChart(Widget):
    """Repaints when the app hands it a new `TraceView` (at most the repaint rate).

    Drawn a line at a time (Textual's line API) from strips made once per view and size: no
    renderable to lay out, since the chart is the largest thing repainted in watch mode."""

    view: reactive[TraceView | None] = reactive(None, always_update=True)

    def __init__(self, title: str | None = None, **kwargs: Any) -> None:
        """`title`: a fixed border title (watch mode's); without one it names the variant running."""
        super().__init__(**kwargs)
        self._fixed_title = title
        self._strips: tuple[object, Size, list[Strip]] | None = None  # (view, outer size, its lines)

    def watch_view(self, view: TraceView | None) -> None:
        if self._fixed_title:
            self.border_title = self._fixed_title
        else:
            self.border_title = f"Running: {markup(view.label)}" if view is not None and view.label else "Running"
        self.refresh()  # the size is the layout's (CSS), never the data's: no layout pass

    def notify_style_update(self) -> None:
        self._strips = None  # colours, border or padding changed
        super().notify_style_update()

    def render_line(self, y: int) -> Strip:
        outer = self.outer_size  # cheap, unlike the content size (asked once a line)
        if self._strips is None or self._strips[0] is not self.view or self._strips[1] != outer:
            self._strips = (self.view, outer, self._make_strips(self.content_size))
        lines = self._strips[2]
        return lines[y] if y < len(lines) else Strip.blank(self.content_size.width, self.rich_style)

    def _make_strips(self, size: Size) -> list[Strip]:
        if self.view is None:
            return []
        maker = StripMaker(self.rich_style)
        return [maker.strip(line, size.width) for line in chart_lines(self.view, max(10, size.width), size.height)]
