"""The main layout: the Power and Server panels, the sweep table and the run chart, scrolling.

It passes the app's state down to its panels (`data_bind`: the newest power snapshot, the Server
panel's view, the live results document, watch mode, the width) and owns their order: at 80
columns the sweep table goes on top once it has a column, since it is what a sweep is for; from
110 columns the two panels sit side by side (CSS).
"""

from __future__ import annotations

from textual.app import ComposeResult
from textual.reactive import reactive

from precmon.core.schema import ResultsDoc
from precmon.tui.power_view import PowerSnapshot
from precmon.tui.server_view import ServerView
from precmon.tui.widgets.blank import BlankScroll, Row
from precmon.tui.widgets.power_panel import PowerPanel
from precmon.tui.widgets.run_chart import RunChart
from precmon.tui.widgets.server_panel import ServerPanel
from precmon.tui.widgets.sweep_table import SweepTable


class MainView(BlankScroll):
    """The panels, the table and the chart; bound to the app's state, which it hands down."""

    power: reactive[PowerSnapshot | None] = reactive(None, always_update=True)
    server_view: reactive[ServerView] = reactive(ServerView, always_update=True)
    results: reactive[ResultsDoc | None] = reactive(None, always_update=True)
    watching: reactive[bool] = reactive(False)
    narrow: reactive[bool] = reactive(False)

    def compose(self) -> ComposeResult:
        view = MainView
        with Row(id="top"):
            yield PowerPanel(id="power").data_bind(snapshot=view.power, hidden=view.watching, narrow=view.narrow)
            yield ServerPanel(id="server").data_bind(view=view.server_view, hidden=view.watching, compact=view.narrow)
        yield SweepTable(id="sweep").data_bind(doc=view.results, narrow=view.narrow)
        yield RunChart(id="chart")

    def watch_results(self) -> None:
        self._order()

    def watch_narrow(self) -> None:
        self._order()

    def _order(self) -> None:
        if not self.is_mounted:
            return
        sweep, top = self.query_one(SweepTable), self.query_one("#top", Row)
        table_first = self.narrow and bool(self.results and self.results.variants)
        if table_first != (self.children[0] is sweep):
            self.move_child(sweep, before=top) if table_first else self.move_child(sweep, after=top)
