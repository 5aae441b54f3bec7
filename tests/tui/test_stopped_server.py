"""The H200 run's finished screen (docs/results/h200-2026-12-01): the sweep had stopped the last
server it launched, yet the Server panel said `● healthy` above ten wrapped lines of connection
errors (a URL with `?model=%2Ftmp%2F…&autoload=false` in each), which pushed the Sweep table down
and, with the table's own width mismeasured, cut its 3rd and 4th variant columns off silently.

Now a stopped server is said in one line, error texts are one line each without query strings,
and the table fits its four columns at 120×40 (or names the ones cut)."""

from __future__ import annotations

import asyncio
import time

from rich.console import Console

from precmon.core.schema import ResultsDoc, from_json
from precmon.report.table import build_table
from precmon.servers.watch import metrics
from precmon.servers.watch.live_rate import LiveRate
from precmon.tui.messages import ServerProbed
from precmon.tui.widgets.server_panel import ServerPanel, ServerView, panel_error, render_server
from precmon.tui.widgets.sweep_table import SweepTable, fit_table
from precmon.tui.workers.background import Quitting
from precmon.tui.workers.power_worker import PowerWorker
from precmon.tui.workers.server_worker import SERVER_POLL_S, ServerConfig, ServerWorker
from tests.fakes.timed_server import TimedServer
from tests.tui import scenes
from tests.tui.conftest import no_meter_factory
from tests.tui.test_follow_sweep_server import _until
from tests.tui.test_plan_layout import _screen

URL = "http://127.0.0.1:18203"
QUERY = "?model=%2Ftmp%2Fpm%2Fwork%2Fmodels%2F8b-Q4_K_M.gguf"
REFUSED = "connection refused or host unreachable (is the server running?)"
SLOTS_ERR = f"cannot connect to {URL}/slots{QUERY}&autoload=false: {REFUSED}"
METRICS_ERR = f"cannot connect to {URL}/metrics{QUERY}: {REFUSED}"


def test_panel_error_is_one_line_without_query_strings_or_credentials():
    assert panel_error(SLOTS_ERR) == f"cannot connect to {URL}/slots: {REFUSED}"
    assert panel_error(METRICS_ERR) == f"cannot connect to {URL}/metrics: {REFUSED}"
    assert panel_error("HTTP 500 from http://u:pw@h:1/metrics?api_key=k#x\nTraceback …") == (
        "HTTP 500 from http://***@h:1/metrics"
    )
    assert panel_error("bad \x1b[2Jbody at http://h/x?a=1, then http://h/y?b=2 end") == (
        "bad body at http://h/x, then http://h/y end"
    )
    assert panel_error("no URL here: just a reason") == "no URL here: just a reason"


def _lines(view: ServerView, width: int = 60) -> list[str]:
    console = Console(width=width, record=True, color_system=None, file=open("/dev/null", "w"))  # noqa: SIM115
    console.print(render_server(view))
    console.file.close()
    return [line.rstrip() for line in console.export_text().splitlines()]


def test_live_and_scrape_errors_take_one_line_each():
    rates = metrics.LiveRates("llamacpp", 1.0, generation_tok_s=0.0, requests_running=0.0)
    view = ServerView(
        url=URL,
        healthy=True,
        live=LiveRate(None, "llama.cpp /slots", error=SLOTS_ERR),
        rates=rates,
        metrics_error=METRICS_ERR,
    )
    lines = _lines(view)
    text = "\n".join(lines)
    assert "?model=" not in text and "autoload" not in text, text
    live = [i for i, line in enumerate(lines) if line.startswith("live")]
    assert len(live) == 1, text
    row = lines[live[0] :]
    assert row[0].split(None, 1) == ["live", row[0].split(None, 1)[1]], text
    assert row[0].split(None, 1)[1].startswith("n/a — cannot connect to") and row[0].endswith("…"), text
    assert row[1].strip() == "0 running", text
    assert row[2].strip().startswith("last scrape failed: cannot connect to") and row[2].endswith("…"), text
    assert len(row) == 3, text  # nothing wrapped onto a fourth line


def test_a_server_stopped_by_the_sweep_says_so_and_drops_late_errors():
    async def scenario():
        app = scenes.h200_app()
        async with app.run_test(size=(120, 40)) as pilot:
            await scenes.h200_finished(pilot)
            panel = app.query_one(ServerPanel)
            screen, view = _screen(app), panel.view
            hidden = app.query_one(SweepTable).border_title
            log = str(app.query_one("#log-line").content)
            app.exit(0)
        return screen, view, hidden, log

    screen, view, title, log = asyncio.run(scenario())
    assert log == "sweep finished: out/results.json", log  # not "server went away: cannot connect…"
    assert view.stopped == "stopped by the sweep (launched variant Q4_K_M kv q8_0)"
    assert view.healthy is None and view.live is None and view.metrics_error is None and view.error is None
    assert "■ stopped" in screen and "stopped by the sweep (launched" in screen, screen
    assert "healthy" not in screen and "cannot connect" not in screen and "unreachable" not in screen, screen
    for label in ("F16 ⚠", "Q8_0 ⚠", "Q4_K_M ⚠", "Q4_K_M kv q8_0 ⚠"):  # every column, whole
        assert label in screen, (label, screen)
    assert title == "Sweep", title


def test_the_h200_table_fits_120_columns_and_names_the_cut_at_80():
    table = build_table(from_json(ResultsDoc, scenes.h200_doc()))
    console = Console(width=80)  # the app's console is 80 wide whatever the terminal: never the measure
    grid, hidden = fit_table(table, 8, 115, console)  # 120 columns: border, padding and scrollbar off
    assert hidden == 0
    wide = Console(width=115, record=True, file=open("/dev/null", "w"))  # noqa: SIM115 - closed below
    wide.print(grid)
    wide.file.close()
    text = wide.export_text()
    assert "±" in text and "Q4_K_M kv q8_0" in text, text  # the CIs kept, the sparklines gone
    _, hidden = fit_table(table, 3, 76, console)  # 80 columns
    assert hidden == 1


def test_the_cut_columns_are_named_at_80x24():
    async def scenario():
        app = scenes.h200_app()
        async with app.run_test(size=(80, 24)) as pilot:
            await scenes.h200_finished(pilot)
            title = app.query_one(SweepTable).border_title
            app.exit(0)
        return title

    assert asyncio.run(scenario()) == "Sweep · 1 more column → (scroll)"


def test_unfollow_stops_asking_the_server_and_the_same_url_is_followed_afresh():
    posted: list[object] = []
    quitting = Quitting()
    power = PowerWorker(posted.append, quitting, no_meter_factory)
    worker = ServerWorker(posted.append, quitting, power, ServerConfig())
    try:
        with TimedServer() as srv:
            worker.follow(srv.url, "model-one")

            def probes() -> int:
                return sum(isinstance(m, ServerProbed) and m.snapshot.url == srv.url for m in list(posted))

            assert _until(lambda: probes() > 0, 10)
            worker.unfollow()
            assert _until(lambda: worker.config.url is None, 5)
            quiet_from = len(posted)
            time.sleep(2 * SERVER_POLL_S + 0.5)  # two ticks: a watched server would be scraped, read
            assert posted[quiet_from:] == [], posted[quiet_from:]
            # the next variant's server on the same URL (a new process): watched again, from scratch
            seen = probes()
            worker.follow(srv.url, "model-two")
            assert _until(lambda: probes() > seen, 10)
            assert worker.config.url == srv.url and worker.metrics_model == "model-two"
            # stopped and the next one followed before the worker's next tick: still afresh
            worker.unfollow()
            worker.follow(srv.url, "model-three")
            assert _until(lambda: worker.metrics_model == "model-three", 5), worker.metrics_model
    finally:
        quitting.set()
        quitting.join(5.0)
