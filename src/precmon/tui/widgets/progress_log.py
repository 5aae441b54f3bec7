"""The progress bar and the one-line log under the panels.

The newest line is shown; the last few hundred are kept for tests. `event` says what a bench's
or sweep's event means here; progress text collapses upstream (`SweepEventArrived.can_replace`),
so a fast bench never floods this widget.
"""

from __future__ import annotations

from collections import deque
from typing import Any

from rich.text import Text
from textual.app import ComposeResult
from textual.widgets import ProgressBar, Static

from precmon.sweep.events import Log, Progress, SweepEvent, SweepFinished, VariantFinished, VariantStarted
from precmon.tui.widgets.blank import Row
from precmon.untrusted import redact, visible


class ProgressLog(Row):
    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.lines: deque[str] = deque(maxlen=500)

    def compose(self) -> ComposeResult:
        yield ProgressBar(total=100, show_eta=False, id="progress-bar")
        yield Static("", id="log-line")

    def progress(self, done: int, total: int, text: str) -> None:
        bar = self.query_one(ProgressBar)
        bar.update(total=max(total, 1), progress=min(done, max(total, 1)))
        self._show(text, style="")

    def event(self, ev: SweepEvent, source: str) -> None:
        """A bench's or sweep's event (`source`: "bench" or "sweep"), as a line or the bar."""
        if isinstance(ev, VariantStarted):
            self.log_line(f"{source}: measuring {ev.label} ({ev.index + 1}/{ev.total})")
        elif isinstance(ev, Progress):
            self.progress(ev.done, ev.total, f"{ev.label}: {ev.text}")
        elif isinstance(ev, VariantFinished):
            result = ev.result
            errs = f" — {result.errors[0]}" if result.errors and result.status != "ok" else ""
            self.log_line(f"{result.label}: {result.status}{errs}", error=result.status == "failed")
        elif isinstance(ev, Log):
            self.log_line(ev.text)
        elif isinstance(ev, SweepFinished):
            what = "stopped; kept" if ev.interrupted else "finished"
            self.log_line(f"sweep {what}: {ev.results_path}")

    def idle(self) -> None:
        self.query_one(ProgressBar).update(total=100, progress=0)

    def log_line(self, text: str, error: bool = False) -> None:
        self.lines.append(redact(text))
        self._show(text, style="bold red" if error else "")

    def _show(self, text: str, style: str) -> None:
        line = Text(visible(redact(text)), style=style, no_wrap=True, overflow="ellipsis")
        self.query_one("#log-line", Static).update(line)
