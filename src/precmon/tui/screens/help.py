"""The help screen: the keys, and what every number means (docs/design.md §4, the same text as exports)."""

from __future__ import annotations

from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

from precmon.report.analysis.quality import QUALITY_DEFINITION, QUALITY_KEYS, QUALITY_TERM
from precmon.report.fmt import metric_definitions
from precmon.untrusted import visible

KEYS = (
    ("b", "bench the current server (one variant, quick settings unless given)"),
    ("s", "start / stop the sweep (--sweep FILE, else every model the server lists)"),
    ("e", "export JSON, CSV, Markdown, HTML and an SVG screenshot into the results folder"),
    ("w", "watch layout: big tok/s, W and J/token readouts"),
    ("a", "answers: each variant's answer to one question side by side, and what ran (weights, kernels)"),
    ("?", "this help"),
    ("q, ctrl+c", "quit (asks while a bench or sweep runs; measured runs are already on disk)"),
    ("↑↓ PgUp PgDn", "scroll the panels and the sweep table"),
)


def help_renderable() -> Table:
    t = Table.grid(padding=(0, 2))
    t.add_column(style="bold", no_wrap=True)
    t.add_column()
    t.add_row(Text("Keys", style="bold underline"), "")
    # Text, not str: rich would read "[...]" in a definition as markup
    for key, what in KEYS:
        t.add_row(Text(key), Text(what))
    t.add_row("", "")
    t.add_row(Text("Metrics", style="bold underline"), "")
    for name, definition in metric_definitions(QUALITY_KEYS):
        definition = QUALITY_DEFINITION if name == QUALITY_TERM else definition
        t.add_row(Text(visible(name)), Text(visible(definition, one_line=False)))
    t.add_row("", "")
    t.add_row(
        "Ratios",
        "vs the baseline column (first variant that did not fail): speed rows say how many "
        "times faster (> 1× is better), cost rows the change (−23% is a saving). * marks "
        "the best value of a row; ~ a value still being measured (newest run, not a median).",
    )
    return t


class HelpScreen(ModalScreen[None]):
    BINDINGS = [Binding("escape,q,question_mark", "close", "Close")]

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="help-body") as body:
            body.border_title = "precmon — help (Esc to close)"
            yield Static(help_renderable())

    def action_close(self) -> None:
        self.dismiss(None)
