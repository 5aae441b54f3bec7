"""Quit while a bench or sweep runs? Yes abandons only the request in flight: a sweep has journaled
every run as it landed, and a bench saves what it measured (`bench-<label>-<time>.json`) into the
same results folder before precmon exits; the question says so and where."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Static

from precmon.untrusted import visible


class ConfirmQuit(ModalScreen[bool]):
    BINDINGS = [Binding("y", "answer(True)", "Quit"), Binding("n,escape", "answer(False)", "Stay")]

    def __init__(self, where: str | None = None) -> None:
        super().__init__()
        self.where = where

    def compose(self) -> ComposeResult:
        kept = (
            f"Runs measured so far are kept in {visible(self.where)}."
            if self.where
            else "Runs measured so far are kept."
        )
        with Vertical(id="confirm-box"):
            yield Static("A measurement is running. Stop it and quit? (ctrl+c again: quit)", id="confirm-question")
            yield Static(Text(kept), id="confirm-kept")  # a Text: a folder name is not markup
            with Horizontal(id="confirm-buttons"):
                yield Button("Quit (y)", id="yes", variant="error")
                yield Button("Stay (n)", id="no", variant="primary")

    def on_button_pressed(self, event: Button.Pressed) -> None:
        self.dismiss(event.button.id == "yes")

    def action_answer(self, answer: bool) -> None:
        self.dismiss(answer)
