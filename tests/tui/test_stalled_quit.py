"""#4: quitting during a bench against a stalled server exits at once and saves what was measured;
a bench that breaks on an unexpected error becomes a failed column that keeps (and saves, and
exports) its runs. Driven with Pilot against `StalledServer` (loopback, every stall bounded)."""

from __future__ import annotations

import asyncio
import json
import time

from precmon.core.schema import to_json
from precmon.measure.bench import Bench
from precmon.tui.app import PrecmonApp
from precmon.tui.config import TuiConfig
from precmon.tui.messages import MeasureEnded
from precmon.tui.quit_flow import QUIT_WAIT_S
from precmon.tui.screens.confirm_quit import ConfirmQuit
from tests.fakes.timed_server import Behaviour, TimedServer
from tests.tui.conftest import fast_settings, no_meter_factory, wait_for
from tests.tui.stalled_server import StalledServer

SIZE = (120, 40)


def _runs_landed(app: PrecmonApp) -> int:
    return sum(len(v.get("runs") or []) for v in to_json(app.live.doc)["variants"])


def _quit_during_stall(tmp_path, tokens: int, complete_first: int) -> tuple[PrecmonApp, float]:
    async def scenario() -> tuple[PrecmonApp, float]:
        with StalledServer(tokens=tokens, complete_first=complete_first) as srv:
            app = PrecmonApp(
                TuiConfig(url=srv.url, settings=fast_settings(), out_dir=tmp_path), meter_factory=no_meter_factory
            )
            async with app.run_test(size=SIZE) as pilot:
                await pilot.press("b")
                assert await wait_for(pilot, srv.stalled.is_set, 20), "the fake never stalled"
                assert _runs_landed(app) == complete_first
                await pilot.press("q")
                await pilot.pause(0.1)
                assert isinstance(app.screen, ConfirmQuit)
                t0 = time.monotonic()
                await pilot.press("y")
                assert await wait_for(pilot, lambda: app.return_code is not None, QUIT_WAIT_S + 2)
                took = time.monotonic() - t0
                assert not srv.release.is_set()  # it exited while the server still held the request
            return app, took

    return asyncio.run(scenario())


def test_quit_while_a_bench_stalls_mid_stream_exits_at_once_and_saves_the_measured_runs(tmp_path):
    app, took = _quit_during_stall(tmp_path, tokens=3, complete_first=2)
    assert app.return_code == 0
    assert took < 2.5, f"quitting took {took:.1f} s: it waited on the stalled request"
    saved = list(tmp_path.glob("bench-*/results.json"))
    assert len(saved) == 1, "the dialog promised the runs measured so far are kept"
    variant = json.loads(saved[0].read_text())["variants"][0]
    assert [r["phase"] for r in variant["runs"] if r["ok"]] == ["decode", "decode"]
    assert variant["metrics"]["decode_tok_s"] > 0 and variant["status"] == "partial"
    assert any("quitting" in e for e in variant["errors"])
    assert app.exit_lines() == [f"precmon: results saved: {saved[0]}"]


def test_quit_while_the_server_sends_nothing_exits_at_once(tmp_path):
    app, took = _quit_during_stall(tmp_path, tokens=0, complete_first=0)
    assert app.return_code == 0 and took < 2.5, f"quitting took {took:.1f} s"
    [saved] = tmp_path.glob("bench-*/results.json")
    variant = json.loads(saved.read_text())["variants"][0]
    assert variant["status"] == "failed" and any("quitting" in e for e in variant["errors"])


class _BreaksAfterTwoRuns(Bench):
    """A bench that hits an unexpected bug (not a ServerError) once two runs have landed."""

    def _record(self, run):
        super()._record(run)
        if len(self.result.runs) == 2:
            raise KeyError("choices")


def test_a_bench_ending_on_an_unexpected_error_becomes_failed_keeps_and_exports_its_runs(tmp_path, monkeypatch):
    import precmon.sweep.execute as execute

    monkeypatch.setattr(execute, "Bench", _BreaksAfterTwoRuns)

    async def scenario():
        with TimedServer(Behaviour(itl_s=0.001, prefill_s_per_token=0.0001)) as srv:
            app = PrecmonApp(
                TuiConfig(url=srv.url, settings=fast_settings(), out_dir=tmp_path), meter_factory=no_meter_factory
            )
            async with app.run_test(size=SIZE) as pilot:
                await pilot.press("b")
                assert await wait_for(pilot, lambda: app.measuring is None, 20)
                await pilot.pause(0.4)
                [variant] = to_json(app.live.doc)["variants"]
                assert variant["status"] == "failed" and len(variant["runs"]) == 2
                assert variant["errors"][0] == "KeyError: 'choices'"
                from tests.tui.test_app_keys import _screen_text

                screen = _screen_text(app)
                assert "✗ failed" in screen and "measuring…" not in screen
                [saved] = tmp_path.glob("bench-*/results.json")
                assert len(json.loads(saved.read_text())["variants"][0]["runs"]) == 2
                await pilot.press("e")
                assert await wait_for(pilot, lambda: (tmp_path / "report.json").exists(), 10)
                await pilot.pause(0.3)
                exported = json.loads((tmp_path / "report.json").read_text())["variants"]
                assert [(v["status"], len(v["runs"])) for v in exported] == [("failed", 2)]
                assert not any("nothing measured" in str(n.message) for n in app._notifications)

    asyncio.run(scenario())


def test_a_sweep_ending_on_an_error_leaves_no_column_measuring(tmp_path):
    """The safety net: an `Ended` with an error turns every column still measuring into failed."""

    async def scenario():
        app = PrecmonApp(TuiConfig(out_dir=tmp_path), meter_factory=no_meter_factory)
        async with app.run_test(size=SIZE) as pilot:
            from precmon.core.schema import Run
            from precmon.sweep.events import RunLanded, VariantStarted

            app.replay([VariantStarted("Q8_0", 0, 2, "model"), RunLanded("Q8_0", Run("decode", 16, 16, ok=True))])
            app.post_message(MeasureEnded("sweep", error="OSError: disk full"))
            await pilot.pause(0.5)
            [variant] = to_json(app.live.doc)["variants"]
            assert variant["status"] == "failed" and variant["errors"] == ["OSError: disk full"]
            assert len(variant["runs"]) == 1 and app.live.has_results

    asyncio.run(scenario())


def test_quit_while_a_sweep_stalls_exits_at_once_and_writes_its_results(tmp_path):
    spec = tmp_path / "sweep.toml"

    async def scenario():
        with StalledServer(tokens=3, complete_first=2) as srv:
            spec.write_text(
                f'[defaults]\nurl = "{srv.url}"\noutput_tokens = 16\ndecode_prompt_tokens = 16\n'
                "prefill_tokens = [64]\nttft_tokens = 128\nrepeats = 2\nwarmup = 0\nidle_s = 0\ncooldown_s = 0\n\n"
                '[[variant]]\nlabel = "Q4_K_M"\nprecision = "int4"\nmodel = "fake-Q4_K_M"\n'
            )
            app = PrecmonApp(
                TuiConfig(url=srv.url, sweep_spec=str(spec), out_dir=tmp_path, poll_server=False),
                meter_factory=no_meter_factory,
            )
            async with app.run_test(size=SIZE) as pilot:
                await pilot.press("s")
                assert await wait_for(pilot, srv.stalled.is_set, 20), "the fake never stalled"
                await pilot.press("q")
                await pilot.pause(0.1)
                t0 = time.monotonic()
                await pilot.press("y")
                assert await wait_for(pilot, lambda: app.return_code is not None, 20)
                took = time.monotonic() - t0
                assert not srv.release.is_set()
            return app, took

    app, took = asyncio.run(scenario())
    assert app.return_code == 0 and took < 5, f"quitting took {took:.1f} s: it waited on the stalled request"
    [variant] = json.loads((tmp_path / "results.json").read_text())["variants"]
    assert [r["phase"] for r in variant["runs"] if r["ok"]] == ["decode", "decode"]
    assert variant["status"] == "partial" and any("quitting" in e for e in variant["errors"])
    assert app.exit_lines() == [f"precmon: results saved: {tmp_path / 'results.json'}"]
