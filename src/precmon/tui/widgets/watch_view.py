"""Watch mode: three big readouts (tok/s, W, J/token) a room can read from across it.

Passive by default: tok/s comes from the server's live source (everyone's traffic:
`precmon.servers.live_rate`), W from the widest-scope power channel, whose scope the titles
name ("watts · GPU"). With `--drive` the app keeps one steady stream of decode requests going and
the readouts come from those measured requests. Each readout says where its number came from,
since a demo audience will ask; the state line says whose traffic it is (`precmon.tui.watch_state`).
From `CHART_ROWS` rows the per-second chart of the last minutes fills the height below.
"""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.widgets import Digits, Static

from precmon.report.fmt import format_value
from precmon.tui.watch_state import WatchState
from precmon.tui.widgets.big_digits import BigDigits
from precmon.tui.widgets.run_chart import RunChart
from precmon.untrusted import visible


class Readout(Vertical):
    """One big number with its unit above and its provenance below."""

    def __init__(self, title: str, id: str) -> None:
        super().__init__(id=id, classes="readout")
        self._title = title
        self._source: str | None = None

    def compose(self) -> ComposeResult:
        yield Static(Text(visible(self._title), style="bold"), classes="readout-title")
        yield BigDigits("--", classes="readout-digits")
        yield Static("", classes="readout-source")

    def show(self, value: float | None, source: str) -> None:
        text = "--" if value is None else format_value(value)
        digits = self.query_one(Digits)
        if digits.value != text:
            digits.update(text)
        self.remove_class("-stale")
        self._set_source(source)

    def retitle(self, title: str) -> None:
        """The title names the scope ("watts · GPU"): set when it changes."""
        if title != self._title:
            self._title = title
            self.query_one(".readout-title", Static).update(Text(visible(title), style="bold"))

    def mark_stale(self, source: str) -> None:
        """The number shown is no longer live: dim it and say so (words, for NO_COLOR)."""
        if self.query_one(Digits).value in ("--", ""):
            return
        self.add_class("-stale")
        self._set_source(source)

    def _set_source(self, source: str) -> None:
        if source != self._source:
            self._source = source
            self.query_one(".readout-source", Static).update(Text(visible(source), style="dim"))


class WatchView(Vertical):
    """The watch layout; the app calls `show_*` as messages arrive."""

    def __init__(self, **kwargs: object) -> None:
        super().__init__(**kwargs)  # type: ignore[arg-type]
        self._status: tuple[str, str | None] | None = None

    def compose(self) -> ComposeResult:
        with Horizontal(id="readouts"):
            yield Readout("decode tok/s", id="ro-tok")
            yield Readout("watts", id="ro-watts")
            yield Readout("J / token", id="ro-jpt")
        yield Static("", id="watch-status")
        yield RunChart("each second, all clients (newest at the right)", id="watch-chart")

    def titles(self, tok_scope: str, power_scope: str | None) -> None:
        """Whose tokens ("all clients", "precmon's load") and which watts ("GPU", "package"; None:
        no channel with watts, the readout says so)."""
        scope = f" · {power_scope}" if power_scope else ""
        self.query_one("#ro-tok", Readout).retitle(f"tok/s · {tok_scope}")
        self.query_one("#ro-watts", Readout).retitle(f"watts{scope}")
        self.query_one("#ro-jpt", Readout).retitle(f"J / token{scope}")

    def show_tok_s(self, value: float | None, source: str) -> None:
        self.query_one("#ro-tok", Readout).show(value, source)

    def show_watts(self, value: float | None, source: str) -> None:
        self.query_one("#ro-watts", Readout).show(value, source)

    def show_j_per_token(self, value: float | None, source: str) -> None:
        self.query_one("#ro-jpt", Readout).show(value, source)

    def mark_stale(self, source: str) -> None:
        """`--drive` stopped: its tok/s and J/token readouts are the last measured, not live."""
        for rid in ("#ro-tok", "#ro-jpt"):
            self.query_one(rid, Readout).mark_stale(source)

    def status(self, state: WatchState | str) -> None:
        """The state line: its word (DRIVING, PASSIVE, …) bold, then why; a plain line as it is."""
        key = (state.detail, state.word) if isinstance(state, WatchState) else (state, None)
        if key == self._status:
            return
        self._status = key
        text = Text()
        if key[1] is not None:
            text.append(f" {key[1]} ", style="bold reverse" if key[1] != "NO LIVE SOURCE" else "bold reverse yellow")
            text.append(" ")
        text.append(visible(key[0]), style="dim" if key[1] is None else "")
        self.query_one("#watch-status", Static).update(text)
