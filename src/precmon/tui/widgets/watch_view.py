"""Watch mode: three big readouts (tok/s, W, J/token) a room can read from across it.

Passive by default: tok/s comes from the server's live source (everyone's traffic:
`precmon.servers.watch.live_rate`), W from the widest-scope power channel, whose scope the titles
name ("watts · GPU"). With `--drive` the app keeps one steady stream of decode requests going and
the readouts come from those measured requests. Each readout says where its number came from,
since a demo audience will ask; the state line says whose traffic it is (`precmon.tui.watch_state`).
From `CHART_ROWS` rows the per-second chart of the last minutes fills the height below.
"""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.widgets import Static

from precmon.tui.watch_state import WatchState
from precmon.tui.widgets.blank import Column, Row
from precmon.tui.widgets.readout import Readout
from precmon.tui.widgets.run_chart import RunChart
from precmon.untrusted import visible

WARN_WORDS = ("NO LIVE SOURCE", "UNSURE", "FAILING")  # drawn yellow: the figures above are not plain fact


class WatchView(Column):
    """The watch layout; the app calls `show_*` as messages arrive."""

    def __init__(self, **kwargs: object) -> None:
        super().__init__(**kwargs)  # type: ignore[arg-type]
        self._status: tuple[str, str | None] | None = None
        self._readouts: dict[str, Readout] = {}  # id → readout, looked up once (a query walks the DOM)

    def on_mount(self) -> None:
        self._readouts = {r.id or "": r for r in self.query(Readout)}
        for r in self._readouts.values():
            r.peers = tuple(p for p in self._readouts.values() if p is not r)

    def compose(self) -> ComposeResult:
        # Each part sits in a blank box of its own (`widgets/blank.py`): Textual redraws, from its
        # cache, every widget whose parent's region overlaps a change, so a readout's new number
        # would also walk its two siblings, the state line and the chart without them.
        with Row(id="readouts"):
            for title, rid in (("decode tok/s", "ro-tok"), ("watts", "ro-watts"), ("J / token", "ro-jpt")):
                with Column(classes="readout-box"):
                    yield Readout(title, id=rid)
        with Column(id="watch-status-box"):
            yield Static("", id="watch-status")
        with Column(id="watch-chart-box"):
            yield RunChart("each second, all clients (newest at the right)", id="watch-chart")

    def titles(self, tok_scope: str, power_scope: str | None) -> None:
        """Whose tokens ("all clients", "precmon's load") and which watts ("GPU", "package"; None:
        no channel with watts, the readout says so)."""
        scope = f" · {power_scope}" if power_scope else ""
        self._readouts["ro-tok"].retitle(f"tok/s · {tok_scope}")
        self._readouts["ro-watts"].retitle(f"watts{scope}")
        self._readouts["ro-jpt"].retitle(f"J / token{scope}")

    def show_tok_s(self, value: float | None, source: str, unsure: bool = False) -> None:
        """`unsure`: the figure may be off (the source line and the state line say why)."""
        self._readouts["ro-tok"].show(value, source, unsure)

    def show_watts(self, value: float | None, source: str) -> None:
        self._readouts["ro-watts"].show(value, source)

    def show_j_per_token(self, value: float | None, source: str) -> None:
        self._readouts["ro-jpt"].show(value, source)

    def mark_stale(self, source: str) -> None:
        """`--drive` stopped: its tok/s and J/token readouts are the last measured, not live."""
        for rid in ("ro-tok", "ro-jpt"):
            self._readouts[rid].mark_stale(source)

    def status(self, state: WatchState | str) -> None:
        """The state line: its word (DRIVING, PASSIVE, …) bold, then why; a plain line as it is."""
        key = (state.detail, state.word) if isinstance(state, WatchState) else (state, None)
        if key == self._status:
            return
        self._status = key
        text = Text()
        if key[1] is not None:
            text.append(f" {key[1]} ", style="bold reverse yellow" if key[1] in WARN_WORDS else "bold reverse")
            text.append(" ")
        text.append(visible(key[0]), style="dim" if key[1] is None else "")
        self.query_one("#watch-status", Static).update(text)
