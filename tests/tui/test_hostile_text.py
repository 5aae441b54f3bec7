"""#6: strings from servers, results files and labels reach the screen as typed, never as markup
or terminal escapes. Each widget gets the same hostile strings: `[/]` (a MarkupError once crashed
the TUI), `[bold]x` and `[imatrix]` (markup that swallowed text), an OSC title change and a
clear-screen CSI (which must not reach the terminal)."""

from __future__ import annotations

import asyncio
import html
import re

from precmon.core.schema import ResultsDoc, from_json
from precmon.power.base import Channel, Unavailable
from precmon.servers.watch.live_rate import LiveRate
from precmon.sweep.events import Log
from precmon.tui.app import PrecmonApp
from precmon.tui.config import TuiConfig
from precmon.tui.messages import LiveRateRead, MeasureEnded, MetricsScraped
from precmon.tui.screens.confirm_quit import ConfirmQuit
from tests.tui.conftest import CHANNELS, FrozenMeter, no_meter_factory, wait_for

OSC, CSI = "\x1b]0;t\x07", "\x1b[2J"
SIZE = (160, 50)


def _raw_screen(app: PrecmonApp) -> str:
    svg = app.export_screenshot()
    return html.unescape(re.sub(r"<[^>]+>", "", svg)).replace("\xa0", " ")


def _no_escapes(text: str) -> None:
    assert "\x1b" not in text and "\x07" not in text and "]0;t" not in text


def _hostile_doc(cpu_doc: dict) -> dict:
    labels = ["F16 [/]", "Q4_K_M [imatrix]", f"{OSC}T3{CSI}"]
    for v, label in zip(cpu_doc["variants"], labels, strict=True):
        v["label"] = label
    cpu_doc["variants"][1]["precision"] = "[bold]x"
    cpu_doc["variants"][2].update(status="failed", errors=[f"[bold]x{CSI} HTTP 500 [/]"])
    return cpu_doc


def test_sweep_table_shows_hostile_labels_errors_and_subtitle_as_typed(cpu_doc):
    async def scenario():
        app = PrecmonApp(
            TuiConfig(poll_server=False),
            initial_results=from_json(ResultsDoc, _hostile_doc(cpu_doc)),
            meter_factory=no_meter_factory,
        )
        async with app.run_test(size=SIZE) as pilot:
            # the table is painted a batch interval after mount: on a loaded machine later than 0.5 s
            # (CI once captured the screen before it: nothing but the progress bar)
            await wait_for(pilot, lambda: "HTTP 500 [/]" in _raw_screen(app), 10)
            screen = _raw_screen(app)
            assert "F16 [/]" in screen and "Q4_K_M [imatrix]" in screen and "T3" in screen
            assert "[bold]x" in screen and "HTTP 500 [/]" in screen
            assert "ratios vs F16 [/]" in screen  # the border subtitle is markup: escaped
            _no_escapes(screen)

    asyncio.run(scenario())


def test_server_panel_shows_hostile_server_facts_and_errors_as_typed():
    async def scenario():
        app = PrecmonApp(TuiConfig(url="http://127.0.0.1:9", poll_server=False), meter_factory=no_meter_factory)
        async with app.run_test(size=SIZE) as pilot:
            app.show_server(True, kind="[bold]x", version=f"{OSC}v1", model="F16 [/]", precision=f"{CSI}[imatrix]")
            await pilot.pause(0.3)
            screen = _raw_screen(app)
            assert "[bold]x" in screen and "v1" in screen and "F16 [/]" in screen and "[imatrix]" in screen
            _no_escapes(screen)
            app.show_server(False, error=f"HTTP 500 from /v1/models: [/] {CSI}{OSC}boom")
            await pilot.pause(0.3)
            screen = _raw_screen(app)
            assert "✗ unreachable — HTTP 500 from" in screen and "[/] boom" in screen
            _no_escapes(screen)
            # a healthy server's failed scrape and live read (a down one's are not repeated)
            app.show_server(True, kind="llamacpp")
            app.server_worker.post(MetricsScraped(None, f"[bold]x{CSI}"))
            await pilot.pause(0.3)
            screen = _raw_screen(app)
            assert "[bold]x" in screen
            _no_escapes(screen)
            app.server_worker.post(LiveRateRead(LiveRate(None, "/slots", error=f"[/]y{OSC}z")))
            await pilot.pause(0.3)
            screen = _raw_screen(app)
            assert "[/]yz" in screen
            _no_escapes(screen)

    asyncio.run(scenario())


class _HostileMeter(FrozenMeter):
    def channels(self) -> list[Channel]:
        c = CHANNELS
        return [
            Channel(c[0].id, "nvml", f"GPU [/]{OSC}", "gpu"),
            Channel(c[1].id, "spbm", f"{CSI}[bold]x", "system"),
            Channel("fan", "host", "fan", "system", has_watts=False, note="[imatrix] note"),
        ]

    def errors(self) -> dict[str, str]:
        return {"nvml": f"[/] read failed {CSI}"}


def test_power_panel_shows_hostile_labels_reasons_and_errors_as_typed():
    # beside a source with watts the absences fold into one line naming them (reasons: `precmon doctor`)
    absent = [Unavailable("rapl", f"[bold]x permission denied {OSC}", label=f"rapl [/]{CSI}zone")]

    async def scenario():
        app = PrecmonApp(
            TuiConfig(poll_server=False), meter_factory=lambda: (_HostileMeter(), absent, f"note [/]{CSI}")
        )
        async with app.run_test(size=SIZE) as pilot:
            await pilot.pause(0.8)
            screen = _raw_screen(app)
            for typed in ("GPU [/]", "[bold]x", "[imatrix] note", "[/] read failed", "rapl [/]zone", "note [/]"):
                assert typed in screen, typed
            _no_escapes(screen)

    asyncio.run(scenario())


def test_progress_log_toast_and_quit_dialog_show_hostile_text_as_typed(tmp_path):
    out = tmp_path / "[bold]x"

    async def scenario():
        app = PrecmonApp(TuiConfig(out_dir=out, poll_server=False), meter_factory=no_meter_factory)
        async with app.run_test(size=SIZE) as pilot:
            app.replay([Log(f"[/] log {CSI}{OSC}line")])
            await pilot.pause(0.3)
            screen = _raw_screen(app)
            assert "[/] log line" in screen
            _no_escapes(screen)
            app.post_message(MeasureEnded("bench", error=f"[/] boom [bold]x{CSI}"))
            await pilot.pause(0.5)
            screen = _raw_screen(app)
            assert "[/] boom [bold]x" in screen  # the error toast (markup) and the log line
            _no_escapes(screen)
            app.push_screen(ConfirmQuit(f"{out}{OSC}"))
            await pilot.pause(0.3)
            screen = _raw_screen(app)
            assert "kept in" in screen and "[bold]x" in screen
            _no_escapes(screen)
            assert app.is_running

    asyncio.run(scenario())


def test_help_shows_definitions_with_brackets_as_typed(monkeypatch):
    import precmon.tui.screens.help as help_screen

    defs = [*help_screen.metric_definitions(), ("Odd [/]", f"a [bold]x definition {CSI}")]
    monkeypatch.setattr(help_screen, "metric_definitions", lambda *_: defs)

    async def scenario():
        app = PrecmonApp(TuiConfig(poll_server=False), meter_factory=no_meter_factory)
        async with app.run_test(size=SIZE) as pilot:
            await pilot.press("question_mark")
            await pilot.press("end")
            await pilot.pause(0.3)
            screen = _raw_screen(app)
            assert "Odd [/]" in screen and "a [bold]x definition" in screen
            _no_escapes(screen)

    asyncio.run(scenario())


def test_a_password_in_the_url_is_never_shown():
    async def scenario():
        app = PrecmonApp(
            TuiConfig(url="http://user:s3cret@127.0.0.1:9", poll_server=False), meter_factory=no_meter_factory
        )
        async with app.run_test(size=SIZE) as pilot:
            await pilot.pause(0.3)
            screen = _raw_screen(app)
            assert "127.0.0.1:9" in screen and "s3cret" not in screen
            app.show_server(False, error="cannot connect to http://user:s3cret@127.0.0.1:9: refused")
            app.post_message(MeasureEnded("bench", error="HTTP 401 from http://user:s3cret@127.0.0.1:9"))
            await pilot.pause(0.5)
            assert "s3cret" not in _raw_screen(app) and "HTTP 401" in _raw_screen(app)
            assert not any("s3cret" in line for line in app.query_one("ProgressLog").lines)
            app.watching = True
            await pilot.pause(0.3)
            assert "s3cret" not in _raw_screen(app)

    asyncio.run(scenario())


def test_a_long_label_leaves_room_for_the_other_columns(cpu_doc):
    """A 300-character label made its column 300 wide: at 80x24 the table showed that label's
    blank tail and no variant's numbers."""
    from precmon.report.fmt import format_value

    decode = [format_value(v["metrics"]["decode_tok_s"]) for v in cpu_doc["variants"]]
    cpu_doc["variants"][0]["label"] = "x" * 300

    async def scenario():
        app = PrecmonApp(
            TuiConfig(poll_server=False), initial_results=from_json(ResultsDoc, cpu_doc), meter_factory=no_meter_factory
        )
        async with app.run_test(size=(80, 24)) as pilot:
            await pilot.pause(0.5)
            screen = _raw_screen(app)
            assert all(value in screen for value in decode), (decode, screen)

    asyncio.run(scenario())


def test_a_long_model_name_still_names_a_file_the_bench_can_save(tmp_path):
    """Files named after a label (a launched server's `logs/<label>.log`, `launched/<label>.json`)
    take it from the server (its model id): a 300-character or CJK one must still make a name a file
    system takes (255 bytes), with no separator in it."""
    from precmon.untrusted import file_part

    for label in ("x" * 300, "量化" * 100, "../../etc/passwd", "\x1b]0;t\x07"):
        name = f"{file_part(label)}.log"
        (tmp_path / name).write_text("{}")  # one file in tmp_path: no separator survived
        assert len(name.encode()) <= 255 and "/" not in name
    assert file_part("x" * 300) != file_part("x" * 299 + "y")  # cut, yet two labels stay two files
