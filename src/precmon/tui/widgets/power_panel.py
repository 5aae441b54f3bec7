"""The Power panel: one row per channel (watts, scope, sparkline, GPU extras), one per other node
(`--power-from`: its headline channel, or why it has none) and every absence.

Rows come prepared from the power worker (`PowerSnapshot`); this widget only lays them out.
A missing source reads "n/a" in words, so NO_COLOR and screen readers lose nothing; beside a
source with watts the absences fold into one line (`precmon doctor` says why each is missing),
and so do channels that have given no watts yet; a row shows only the fields its device has
(GB10: no power limit, memory from /proc/meminfo; the spbm status row: PROCHOT, PL level, a cap
reached),
and without one, absences that share a reason are merged into one line to save rows at 80×24.
"""

from __future__ import annotations

from collections.abc import Callable

from rich.console import Console, ConsoleOptions, RenderResult
from rich.table import Table
from rich.text import Text
from textual.reactive import reactive
from textual.widgets import Static

from precmon.report.fmt import format_value
from precmon.report.sparkline import sparkline
from precmon.tui.power_view import PowerRow, PowerSnapshot
from precmon.untrusted import visible


def _gb(n: float) -> str:
    return f"{n / 1e9:.1f}"


def extras_text(extra: dict[str, float]) -> str:
    """GPU/host extras in reading order: utilization, clocks, temperature, memory."""
    parts = []
    for key, fmt in (
        ("gpu_util_pct", "util {:.0f}%"),
        ("cpu_util_pct", "cpu {:.0f}%"),
        ("sm_clock_mhz", "{:.0f} MHz"),
        ("temp_c", "{:.0f}°C"),
    ):
        if extra.get(key) is not None:
            parts.append(fmt.format(extra[key]))
    used, total = extra.get("mem_used_bytes"), extra.get("mem_total_bytes")
    if used is not None and total:
        parts.append(f"mem {_gb(used)}/{_gb(total)} GB")
    return " · ".join(parts + spark_status_parts(extra))


def spark_status_parts(extra: dict[str, float]) -> list[str]:
    """The spbm status row's fields (power/spark): only those the driver exposes, never an n/a."""
    parts = []
    if "prochot" in extra:
        parts.append("PROCHOT ON" if extra["prochot"] else "prochot off")
    if "pl_level" in extra:
        parts.append(f"PL level {extra['pl_level']:.0f}")
    for ctl in ("pl1", "pl2", "syspl1", "syspl2"):
        ewma, cap = extra.get(f"{ctl}_ewma_w"), extra.get(f"{ctl}_cap_w")
        if ewma is not None and cap and ewma >= 0.95 * cap:  # measure/trust/spark.py AT_CAP_RATIO
            parts.append(f"at {ctl} cap {cap:.0f} W")
    return parts


class PowerPanel(Static):
    """Live power per channel, drawn from the app's `power` snapshot (bound: `snapshot`).

    `hidden` (bound to the app's `watching`): watch mode hides the panel, and a hidden panel is
    not drawn (watch mode stays cheap); it is drawn as it is now when shown again. `narrow`
    (bound): 80 columns, shorter sparklines."""

    BORDER_TITLE = "Power"
    snapshot: reactive[PowerSnapshot | None] = reactive(None, always_update=True)
    hidden: reactive[bool] = reactive(False)
    narrow: reactive[bool] = reactive(False)

    _shape: tuple[int, int] | None = None

    @property
    def spark_width(self) -> int:
        return 12 if self.narrow else 16

    def on_mount(self) -> None:
        self.update(self.render_snapshot(self.snapshot))

    def watch_snapshot(self, snapshot: PowerSnapshot | None) -> None:
        if self.hidden:
            return  # drawn when shown again
        # A tick changes numbers, rarely the number of rows: repaint without a layout pass
        # (Static.update would reflow the whole screen 4 times a second).
        shape = (len(snapshot.rows), len(snapshot.errors)) if snapshot else None
        self.update(self.render_snapshot(snapshot), layout=shape != self._shape)
        self._shape = shape

    def watch_hidden(self, hidden: bool) -> None:
        if not hidden and self.snapshot is not None:
            self.watch_snapshot(self.snapshot)

    def render_snapshot(self, snap: PowerSnapshot | None) -> PowerLayout | Text:
        if snap is None:
            return Text("discovering power sources…", style="dim")
        return PowerLayout(snap, self.spark_width)


class PowerLayout:
    """The panel's rows, laid out for the width they get (a rich renderable).

    A GPU row carries watts, a sparkline and the extras (util, SM clock in MHz, temperature,
    memory). When that does not fit on one line (120 columns: the panel is 3/5 of the screen) the
    extras go on a line of their own under it, indented to the scope column, instead of being cut
    ("… util 92% · 1980…" hid clock units, temperature and memory). Column widths are fixed per
    snapshot, so rows stay aligned across the separate grids. Where a source has watts, the
    sources without any fold into one line; where none has, each reason stays (it says why).
    """

    LABEL_MAX = 18

    def __init__(self, snap: PowerSnapshot, spark_width: int) -> None:
        self.snap, self.spark_width = snap, spark_width

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        snap, width = self.snap, options.max_width
        available = [r for r in snap.rows if r.available]
        absent = [r for r in snap.rows if not r.available and r.kind != "node"]
        lost = [r for r in snap.rows if not r.available and r.kind == "node"]  # another node: its own reason
        has_watts = any(r.has_watts for r in available)
        grid, label_w, detail_w = self._grid(available, absent, has_watts, width)
        table = grid()
        available, silent = _split_silent(available, has_watts)
        for row in available:
            cells, extras = self._cells(row, detail_w)
            if extras and cells[3].cell_len + 2 + len(extras) <= detail_w:
                cells[3].append("  ")
                cells[3].append(extras, style="dim")
                extras = ""
            table.add_row(*cells)
            if extras:  # its own line, from the scope column on: nothing of it is cut at 120 columns
                yield table
                table = grid()
                yield Text(" " * (label_w + 1) + extras, style="dim", no_wrap=True, overflow="ellipsis")
        for row in lost:
            table.add_row(
                Text(visible(row.label), style="bold"), "", "n/a", Text(visible(row.reason or ""), style="dim")
            )
        if not has_watts:
            _add_no_watts(table, absent)
        if snap.note:
            table.add_row(Text("note", style="dim"), "", "", Text(visible(snap.note), style="dim"))
        for kind, err in snap.errors.items():
            table.add_row(Text(visible(kind)), "", Text("error", style="bold red"), Text(visible(err), style="red"))
        if table.row_count:
            yield table
        if silent:
            names = ", ".join(visible(r.label) for r in silent)
            yield Text(f"no reading yet: {names}", style="dim", no_wrap=True, overflow="ellipsis")
        fold = _fold_line(absent, width) if has_watts and absent else None
        if fold:
            yield Text(fold, style="dim", no_wrap=True, overflow="ellipsis")

    def _grid(
        self, available: list[PowerRow], absent: list[PowerRow], has_watts: bool, width: int
    ) -> tuple[Callable[[], Table], int, int]:
        """A maker of empty four-column grids whose widths are fixed for this snapshot (so rows
        line up across the separate grids), the label column's width and the detail column's."""
        labels = [visible(r.label) for r in available] + ([] if has_watts else [k for k, _ in _merge_absent(absent)])
        label_w = min(self.LABEL_MAX, max([len(x) for x in labels] + [8]))
        scope_w = max([len(visible(r.scope or "")) for r in available] + [6])
        watts_w = 8  # "1234.5 W"
        detail_w = max(1, width - label_w - scope_w - watts_w - 3)

        def grid() -> Table:
            t = Table.grid(padding=(0, 1))
            t.add_column(no_wrap=True, width=label_w, overflow="ellipsis")
            t.add_column(no_wrap=True, width=scope_w)
            t.add_column(justify="right", no_wrap=True, width=watts_w)
            t.add_column(no_wrap=True, overflow="ellipsis", width=detail_w)
            return t

        return grid, label_w, detail_w

    def _cells(self, row: PowerRow, detail_w: int) -> tuple[tuple[Text, Text, Text, Text], str]:
        """The row's four cells, and its extras (not yet placed: beside the sparkline or below)."""
        label = Text(visible(row.label), style="bold" if row.has_watts else "")
        scope = Text(visible(row.scope or ""))
        extras = extras_text(row.extra) or (visible(row.note) if row.kind == "node" else "")  # which exporter, channel
        if not row.has_watts:
            dash = Text("—", style="dim")
            if len(extras) > detail_w:  # the spbm status row: its own line rather than a cut PROCHOT
                return (label, scope, dash, Text("")), extras
            return (label, scope, dash, Text(extras or visible(row.note), style="dim")), ""
        watts = Text("n/a" if row.watts is None else f"{format_value(row.watts)} W")
        detail = Text(sparkline(row.history_w, self.spark_width).ljust(self.spark_width), style="green")
        return (label, scope, watts, detail), extras


def _merge_absent(rows: list[PowerRow]) -> list[tuple[str, str]]:
    """[(kinds joined, reason)] with one entry per distinct reason, in first-seen order."""
    merged: dict[str, list[str]] = {}
    for r in rows:
        merged.setdefault(r.reason or "unavailable", []).append(r.label)
    return [(", ".join(labels), reason) for reason, labels in merged.items()]


def _split_silent(available: list[PowerRow], has_watts: bool) -> tuple[list[PowerRow], list[PowerRow]]:
    """(rows to draw, channels with watts that have given none yet). A register the firmware
    leaves inactive, or a counter's rate before its second read, folds into one line instead of
    an n/a row each; unless every channel with watts is silent, when each keeps its row."""
    silent = [r for r in available if r.has_watts and r.watts is None and not r.history_w]
    if has_watts and len(silent) < sum(r.has_watts for r in available):
        return [r for r in available if r not in silent], silent
    return available, []


def _add_no_watts(table: Table, absent: list[PowerRow]) -> None:
    """Where no source has watts: a row saying so, then each reason a source is missing."""
    table.add_row(
        Text("watts", style="bold"),
        "",
        "n/a",
        Text("no power source with watts here (see `precmon doctor`)", style="dim"),
    )
    for kinds, reason in _merge_absent(absent):
        table.add_row(
            Text(visible(kinds), style="dim"),
            "",
            Text("n/a", style="dim"),
            Text("— " + visible(reason), style="dim"),
        )


def _fold_line(absent: list[PowerRow], width: int) -> str:
    """Beside a source with watts, one line for all the missing ones, kinds named when they fit."""
    kinds = ", ".join(dict.fromkeys(visible(r.label) for r in absent))
    fold = f"no other power sources ({kinds}) — see `precmon doctor`"
    if len(fold) > width:
        fold = "no other power sources — see `precmon doctor`"
    return fold
