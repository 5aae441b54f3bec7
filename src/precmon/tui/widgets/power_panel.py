"""The Power panel: one row per channel (watts, scope, sparkline, GPU extras) and every absence.

Rows come prepared from the power worker (`PowerSnapshot`); this widget only lays them out.
A missing source reads "n/a — reason" in words, so NO_COLOR and screen readers lose nothing;
absences that share a reason are merged into one line to save rows at 80×24.
"""

from __future__ import annotations

from rich.table import Table
from rich.text import Text
from textual.reactive import reactive
from textual.widgets import Static

from precmon.report.fmt import format_value
from precmon.report.sparkline import sparkline
from precmon.tui.messages import PowerRow, PowerSnapshot
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
    return " · ".join(parts)


class PowerPanel(Static):
    """Live power per channel; `snapshot` is set by the app on every `PowerWorker.Sampled`."""

    BORDER_TITLE = "Power"
    snapshot: reactive[PowerSnapshot | None] = reactive(None, always_update=True)
    spark_width: reactive[int] = reactive(20)

    _shape: tuple[int, int] | None = None

    def on_mount(self) -> None:
        self.update(self.render_snapshot(self.snapshot))

    def watch_snapshot(self, snapshot: PowerSnapshot | None) -> None:
        # A tick changes numbers, rarely the number of rows: repaint without a layout pass
        # (Static.update would reflow the whole screen 4 times a second).
        shape = (len(snapshot.rows), len(snapshot.errors)) if snapshot else None
        self.update(self.render_snapshot(snapshot), layout=shape != self._shape)
        self._shape = shape

    def render_snapshot(self, snap: PowerSnapshot | None) -> Table | Text:
        if snap is None:
            return Text("discovering power sources…", style="dim")
        table = Table.grid(padding=(0, 1), expand=True)
        table.add_column("source", no_wrap=True, min_width=8, max_width=18, overflow="ellipsis")
        table.add_column("scope", no_wrap=True, min_width=6)
        table.add_column("W", justify="right", no_wrap=True, min_width=7)
        table.add_column("detail", no_wrap=True, overflow="ellipsis", ratio=1)
        available = [r for r in snap.rows if r.available]
        for row in available:
            table.add_row(*self._cells(row))
        if not any(r.has_watts for r in available):
            table.add_row(
                Text("watts", style="bold"),
                "",
                "n/a",
                Text("no power source with watts here (see `precmon doctor`)", style="dim"),
            )
        for kinds, reason in _merge_absent([r for r in snap.rows if not r.available]):
            table.add_row(
                Text(visible(kinds), style="dim"),
                "",
                Text("n/a", style="dim"),
                Text("— " + visible(reason), style="dim"),
            )
        if snap.note:
            table.add_row(Text("note", style="dim"), "", "", Text(visible(snap.note), style="dim"))
        for kind, err in snap.errors.items():
            table.add_row(Text(visible(kind)), "", Text("error", style="bold red"), Text(visible(err), style="red"))
        return table

    def _cells(self, row: PowerRow) -> tuple[Text, Text, Text, Text]:
        label = Text(visible(row.label), style="bold" if row.has_watts else "")
        scope = Text(visible(row.scope or ""))
        extras = extras_text(row.extra)
        if not row.has_watts:
            return label, scope, Text("—", style="dim"), Text(extras or visible(row.note), style="dim")
        watts = Text("n/a" if row.watts is None else f"{format_value(row.watts)} W")
        detail = Text(sparkline(row.history_w, self.spark_width).ljust(self.spark_width), style="green")
        if extras:
            detail.append("  ")
            detail.append(extras, style="dim")
        return label, scope, watts, detail


def _merge_absent(rows: list[PowerRow]) -> list[tuple[str, str]]:
    """[(kinds joined, reason)] with one entry per distinct reason, in first-seen order."""
    merged: dict[str, list[str]] = {}
    for r in rows:
        merged.setdefault(r.reason or "unavailable", []).append(r.label)
    return [(", ".join(labels), reason) for reason, labels in merged.items()]
