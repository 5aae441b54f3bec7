"""The run chart: per-second tok/s and W of the variant being measured, as multi-row bar charts.

Shown under the sweep table while a bench or sweep runs, when the terminal has the height
(the app shows it from `MIN_ROWS` rows: 80×24 keeps the table and panels whole). Each chart is
`BAR_ROWS` rows of eighth blocks, one column a second, newest at the right, scaled to its own
peak, and names where its numbers come from (`precmon.tui.run_trace`). Rich text only.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rich.console import RenderableType
from rich.table import Table
from rich.text import Text
from textual.reactive import reactive
from textual.widget import Widget

from precmon.report.fmt import format_value
from precmon.tui.run_trace import TraceView
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
    lines = []
    for r in range(rows):
        from_bottom = rows - 1 - r
        line = []
        for v in shown:
            if v is None:
                line.append("·" if from_bottom == 0 else " ")
                continue
            level = round(v / peak * rows * 8) if peak > 0 else 0
            if v > 0 and level == 0:
                level = 1  # a trickle still shows
            line.append(EIGHTHS[max(0, min(8, level - from_bottom * 8))])
        lines.append(pad + "".join(line))
    return lines


def _chart(
    title: str, unit: str, values: Sequence[float | None], source: str, width: int, style: str, rows: int
) -> Text:
    numbers = [v for v in values if v is not None]
    text = Text(title, style="bold")
    if numbers:
        now = next((v for v in reversed(values) if v is not None), None)
        text.append(f"  now {format_value(now)} {unit}", style="bold")
        text.append(f" · peak {format_value(max(numbers))} · {len(values[-width:])} s", style="dim")
    for line in bar_rows(values, width, rows):
        text.append("\n")
        text.append(line, style=style)
    text.append("\n")
    text.append(visible(source), style="dim")
    return text


def render_chart(view: TraceView, width: int, height: int = BAR_ROWS + 3) -> RenderableType:
    """Both charts in `width` × `height` cells: side by side from `SIDE_BY_SIDE_COLS` columns, each
    with as many bar rows as the height leaves (at least `BAR_ROWS`); stacked below that width."""
    side = width >= SIDE_BY_SIDE_COLS
    col = (width - 3) // 2 if side else width
    # a title line and two lines of source under the bars (a long source folds onto the second)
    rows = max(BAR_ROWS, height - 3) if side else BAR_ROWS
    tok = _chart("decode tok/s", "tok/s", view.tok_s, view.tok_source, col, "green", rows)
    watts = _chart("power", "W", view.watts, view.watts_source, col, "yellow", rows)
    grid = Table.grid(padding=(0, 3) if side else (0, 0))
    if side:
        grid.add_column(width=col, overflow="fold")
        grid.add_column(width=col, overflow="fold")
        grid.add_row(tok, watts)
    else:
        grid.add_column(width=col, overflow="fold")
        grid.add_row(tok)
        grid.add_row(watts)
    return grid


class RunChart(Widget):
    """Repaints when the app hands it a new `TraceView` (at most the repaint rate)."""

    view: reactive[TraceView | None] = reactive(None, always_update=True)

    def __init__(self, title: str | None = None, **kwargs: Any) -> None:
        """`title`: a fixed border title (watch mode's); without one it names the variant running."""
        super().__init__(**kwargs)
        self._fixed_title = title

    def watch_view(self, view: TraceView | None) -> None:
        if self._fixed_title:
            self.border_title = self._fixed_title
        else:
            self.border_title = f"Running: {markup(view.label)}" if view is not None and view.label else "Running"
        self.refresh(layout=True)

    def on_resize(self) -> None:
        self.refresh(layout=True)

    def render(self) -> RenderableType:
        if self.view is None:
            return Text("")
        return render_chart(self.view, max(10, self.content_size.width), self.content_size.height)
