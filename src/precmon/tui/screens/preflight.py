"""The box is not fit to measure: the preflight's findings before a bench or sweep starts, and the
choice to measure anyway or quit (docs/design.md §4 "Preflight").

Measuring anyway keeps every finding in each variant's `warnings`; quitting measures nothing and
exits 2, as `--strict` does headless. The measure worker waits for the answer
(`workers/measure_worker.py`), so nothing is measured while the question is open.
"""

from __future__ import annotations

from rich.text import Text
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Button, Static

from precmon.exit_codes import ExitCode
from precmon.tui.messages import PreflightFound
from precmon.untrusted import visible


class PreflightDialog(ModalScreen[bool]):
    BINDINGS = [Binding("c", "answer(True)", "Measure anyway"), Binding("q,escape", "answer(False)", "Quit")]

    def __init__(self, findings: list[str], source: str) -> None:
        super().__init__()
        self.findings, self.source = findings, source

    def compose(self) -> ComposeResult:
        n = len(self.findings)
        with Vertical(id="preflight-box"):
            yield Static(
                f"This box is not fit to measure: {n} finding{'' if n == 1 else 's'} before the {self.source}.",
                id="preflight-question",
            )
            with VerticalScroll(id="preflight-findings"):
                for line in self.findings:  # Text: a finding names files and processes, not markup
                    yield Static(Text(f"• {visible(line)}"), classes="preflight-finding")
            yield Static("Measured anyway, every variant keeps them as warnings.", id="preflight-kept")
            with Horizontal(id="preflight-buttons"):
                yield Button("Measure anyway (c)", id="go", variant="warning")
                yield Button("Quit (q)", id="quit", variant="primary")

    def on_button_pressed(self, event: Button.Pressed) -> None:
        self.dismiss(event.button.id == "go")

    def action_answer(self, answer: bool) -> None:
        self.dismiss(answer)


def ask_preflight(app: App[int], msg: PreflightFound) -> None:
    """Show the findings; the answer goes to the waiting worker; quit exits 2 (the app's unmount
    stops its loops), nothing measured."""

    def answered(go: bool | None) -> None:
        msg.answer(bool(go))
        if not go:
            app.exit(ExitCode.USAGE)

    app.push_screen(PreflightDialog(msg.findings, msg.source), answered)
