"""A server that went away is said once, in the health row: the live row does not repeat the same
connection error twice more (seen on the H200 when a sweep stopped its last launched server: the
panel grew to 20 lines and cut the sweep table)."""

from __future__ import annotations

from rich.console import Console

from precmon.servers.watch.live_rate import LiveRate
from precmon.servers.watch.rate_window import WindowRate
from precmon.tui.widgets.server_panel import ServerView, render_server

REFUSED = "cannot connect to http://127.0.0.1:18302/health: connection refused or host unreachable"


def _text(view: ServerView) -> str:
    console = Console(width=60, record=True, color_system=None)
    console.print(render_server(view))
    return " ".join(console.export_text().split())  # wrapped lines joined


def test_a_down_server_is_said_once():
    live = LiveRate(None, "slots", error="cannot connect to http://127.0.0.1:18302/slots: connection refused")
    view = ServerView(url="http://127.0.0.1:18302", healthy=False, error=REFUSED, live=live, metrics_error=REFUSED)
    text = _text(view)
    assert text.count("cannot connect") == 1, text
    assert "n/a — the server is unreachable (above)" in text


def test_a_healthy_server_keeps_its_live_row():
    live = LiveRate(225.2, "slots", generating=1)  # the panel shows its window's figure (the one watch mode shows)
    view = ServerView(url="http://127.0.0.1:18302", healthy=True, live=live, live_figure=WindowRate(225.2, 5.0))
    assert "225.2 tok/s" in _text(view)
