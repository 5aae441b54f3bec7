"""The progress bar and the one-line log under the panels.

The newest line is shown; the last few hundred are kept for tests. Progress text collapses
upstream (`MeasureWorker.EventArrived.can_replace`), so a fast bench never floods this widget.
"""

from __future__ import annotations

from collections import deque
from typing import Any

from rich.text import Text
from textual.app import ComposeResult
from textual.widgets import ProgressBar, Static

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

    def idle(self) -> None:
        self.query_one(ProgressBar).update(total=100, progress=0)

    def log_line(self, text: str, error: bool = False) -> None:
        self.lines.append(redact(text))
        self._show(text, style="bold red" if error else "")

    def _show(self, text: str, style: str) -> None:
        line = Text(visible(redact(text)), style=style, no_wrap=True, overflow="ellipsis")
        self.query_one("#log-line", Static).update(line)
