"""The answers view (`a`): each variant's answer to the fixed question side by side, where it
parts from the baseline's, and what ran (weights and compute path) — the same tables as the
report (report/render/terminal.py), drawn from the session's results as they are now."""

from __future__ import annotations

from typing import Any, cast

from rich.console import Group, RenderableType
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

from precmon.report.analysis.answers import answers, what_ran
from precmon.report.model import ResultsDoc
from precmon.report.render.terminal import answers_table, what_ran_table
from precmon.report.table import build_table

NONE_YET = (
    "No answers yet: a variant answers the fixed question after its quality pass (a sweep with "
    "quality on, as `precmon demo` runs; `bench --quality`)."
)


def answers_renderable(doc: ResultsDoc) -> RenderableType:
    base = build_table(doc).baseline
    got = answers(doc, base.label if base is not None else None)
    ran = what_ran(doc)
    parts: list[RenderableType] = []
    parts.append(answers_table(got) if got is not None else Text(NONE_YET))
    if ran:
        parts += [Text(""), what_ran_table(ran)]
    return Group(*parts)


class AnswersScreen(ModalScreen[None]):
    BINDINGS = [Binding("escape,q,a", "close", "Close")]

    def __init__(self, doc: ResultsDoc | dict[str, Any]) -> None:
        super().__init__()
        self._doc = cast(ResultsDoc, doc)

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="answers-body") as body:
            body.border_title = "precmon — answers and what ran (Esc to close, ↑↓ to scroll)"
            yield Static(answers_renderable(self._doc))

    def action_close(self) -> None:
        self.dismiss(None)
