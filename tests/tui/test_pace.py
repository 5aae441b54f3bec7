"""`--refresh-s`: what one setting paces (`precmon.tui.pace`), and the power sampler's two speeds:
slow while nothing is measured, the full rate while a bench, a sweep or --drive runs."""

from __future__ import annotations

import itertools
import threading
import time

import pytest

from precmon.power.base import Channel, Sample
from precmon.power.sampler import PowerSampler
from precmon.refresh import refresh_problem
from precmon.tui.pace import Pace
from precmon.tui.workers.background import Quitting
from precmon.tui.workers.power_worker import PowerWorker


def test_one_refresh_setting_paces_the_repaint_the_poll_and_the_idle_sampler():
    slow, fast = Pace(2.0), Pace(0.5)
    assert (slow.paint_s, slow.server_poll_s, slow.idle_watts_hz, slow.idle_extras_hz) == (2.0, 2.0, 1.0, 0.5)
    # the server is never polled faster than once a second (the live rate is per second)
    assert (fast.paint_s, fast.server_poll_s, fast.idle_watts_hz, fast.idle_extras_hz) == (0.5, 1.0, 2.0, 2.0)
    assert Pace().refresh_s == 1.0
    # the run chart draws a bar a second: a fast refresh redraws it once a second, not each tick
    assert (slow.chart_s, fast.chart_s, Pace(1.0).chart_s) == (2.0, 1.0, 1.0)
    assert refresh_problem(0.05) and refresh_problem(float("nan")) and refresh_problem(61)
    assert refresh_problem(0.1) is None and refresh_problem(60) is None


class Watts:
    kind, blocking = "fake", False

    def channels(self):
        return [Channel("fake:0", "fake", "fake", "gpu")]

    def read(self, full=True):
        return [Sample("fake:0", time.monotonic(), 100.0)]

    def close(self):
        pass


def test_the_sampler_idles_and_a_measurement_holds_the_full_rate():
    sampler = PowerSampler([Watts()], rate_hz=10.0, extras_hz=2.0)
    quitting = Quitting()
    worker = PowerWorker(lambda msg: None, quitting, lambda: (sampler.start(), [], None), Pace(2.0))
    worker.start()
    try:
        assert worker.wait_ready(5.0)
        assert (sampler.rate_hz, sampler.extras_hz) == (1.0, 0.5)  # idle: the pace's rates
        with worker.full_rate():
            assert (sampler.rate_hz, sampler.extras_hz) == (10.0, 2.0)
            with worker.full_rate():  # a sweep while --drive runs: both hold it
                pass
            assert sampler.rate_hz == 10.0  # the outer holder still measures
        assert (sampler.rate_hz, sampler.extras_hz) == (1.0, 0.5)
    finally:
        quitting.set()


class HostAndWatts(Watts):
    """Watts each tick, and the Power panel's extras (a host CPU reading) on full reads only."""

    def __init__(self):
        self.full_reads = 0

    def read(self, full=True):
        self.full_reads += full
        return [Sample("fake:0", time.monotonic(), 100.0, extra={"cpu_util_pct": 5.0} if full else {})]


def test_watch_mode_reads_the_hidden_power_panels_extras_once_a_minute_and_at_once_on_the_way_back():
    """Watch mode shows watts only: the clocks, temperature, memory and host CPU of the hidden
    Power panel are not read every refresh meanwhile; leaving watch mode reads them at once."""
    src = HostAndWatts()
    sampler = PowerSampler([src], rate_hz=10.0, extras_hz=2.0)
    quitting = Quitting()
    worker = PowerWorker(lambda msg: None, quitting, lambda: (sampler.start(), [], None), Pace(0.5))
    worker.watching(True)  # set before the sources open (`precmon watch`): applied when they do
    worker.start()
    try:
        assert worker.wait_ready(5.0)
        assert sampler.rate_hz == 2.0 and sampler.extras_hz == pytest.approx(1 / 60)
        time.sleep(0.3)
        before = src.full_reads
        time.sleep(1.5)
        assert src.full_reads == before  # watts only, at the refresh
        worker.watching(False)
        assert (sampler.rate_hz, sampler.extras_hz) == (2.0, 2.0)
        deadline = time.monotonic() + 2.0
        while src.full_reads == before and time.monotonic() < deadline:
            time.sleep(0.01)
        assert src.full_reads > before and time.monotonic() < deadline - 1.5  # at once, not a period later
        with worker.full_rate():  # a bench from watch mode measures with every extra
            worker.watching(True)
            assert (sampler.rate_hz, sampler.extras_hz) == (10.0, 2.0)
        assert sampler.extras_hz == pytest.approx(1 / 60)
    finally:
        quitting.set()


def test_a_measurement_started_before_the_sources_open_still_gets_the_full_rate():
    """`precmon demo` starts its sweep at mount: it may ask before NVML has opened."""
    sampler = PowerSampler([Watts()], rate_hz=10.0, extras_hz=2.0)
    opened = threading.Event()

    def slow_factory():
        opened.wait(5.0)
        return sampler.start(), [], None

    quitting = Quitting()
    worker = PowerWorker(lambda msg: None, quitting, slow_factory, Pace(1.0))
    worker.start()
    try:
        with worker.full_rate():
            opened.set()
            assert worker.wait_ready(5.0)
            assert sampler.rate_hz == 10.0
        assert sampler.rate_hz == 1.0
    finally:
        quitting.set()


@pytest.mark.parametrize("bad", ["0", "0.05", "61", "nan", "soon"])
def test_refresh_s_out_of_range_is_a_usage_error_naming_the_flag(bad, capsys):
    from precmon.cli.parser import build_parser

    with pytest.raises(SystemExit) as exc:
        build_parser().parse_args(["watch", "--refresh-s", bad])
    assert exc.value.code == 2
    assert "argument --refresh-s:" in capsys.readouterr().err


class RecordingSampler(PowerSampler):
    """A real sampler that notes its watts rate at every phase boundary a measurement opens."""

    def __init__(self) -> None:
        super().__init__([Watts()], rate_hz=10.0, extras_hz=2.0)
        self.rates_at_begin: list[float] = []

    def begin(self, phase: str) -> None:
        self.rates_at_begin.append(self.rate_hz)
        super().begin(phase)


def test_a_tui_bench_measures_at_the_full_rate_and_the_tui_idles_after(tmp_path):
    import asyncio

    from precmon.tui.app import PrecmonApp
    from precmon.tui.config import TuiConfig
    from tests.fakes.timed_server import Behaviour, TimedServer
    from tests.tui.conftest import fast_settings, wait_for

    sampler = RecordingSampler()

    async def scenario() -> None:
        with TimedServer(Behaviour(itl_s=0.001, prefill_s_per_token=0.0001)) as srv:
            app = PrecmonApp(
                TuiConfig(url=srv.url, settings=fast_settings(), out_dir=tmp_path, refresh_s=2.0),
                meter_factory=lambda: (sampler.start(), [], None),
            )
            async with app.run_test(size=(120, 40)) as pilot:
                assert await wait_for(pilot, lambda: app.power_worker.meter is not None)
                assert sampler.rate_hz == 1.0  # nothing measured: idle
                await pilot.press("b")
                assert await wait_for(pilot, lambda: app.measuring is None, 30)
                assert await wait_for(pilot, lambda: sampler.rate_hz == 1.0, 5)  # idle again
                app.exit(0)

    asyncio.run(scenario())
    assert sampler.rates_at_begin and set(sampler.rates_at_begin) == {10.0}


def test_a_fast_refresh_redraws_the_run_chart_once_a_second_and_the_readouts_every_tick():
    """At --refresh-s 0.5 the readouts repaint each tick, the per-second chart once a second: its
    rate reading and its watts second land at different moments and would cost two redraws."""
    import asyncio

    from precmon.servers.watch.live_rate import LiveRate
    from precmon.tui.app import PrecmonApp
    from precmon.tui.config import TuiConfig
    from precmon.tui.widgets.run_chart import RunChart
    from tests.tui import scenes
    from tests.tui.conftest import frozen_meter_factory

    drawn: list[float] = []

    async def scenario() -> None:
        app = PrecmonApp(
            TuiConfig(url=scenes.URL, poll_server=False, watch=True, refresh_s=0.5), meter_factory=frozen_meter_factory
        )
        async with app.run_test(size=(120, 40)) as pilot:
            chart = app.query_one("#watch-chart", RunChart)
            original = chart.watch_view
            chart.watch_view = lambda view: (drawn.append(time.monotonic()), original(view))  # type: ignore[method-assign]
            t0 = time.monotonic()
            for i in range(40):  # a new reading every 0.1 s for 4 s: every tick has something new
                app.trace.add_rate(LiveRate(100.0 + i, "llama.cpp /slots", 0.1, 1, taken_s=t0 + i))
                await pilot.pause(0.1)
            app.exit(0)

    asyncio.run(scenario())
    gaps = [b - a for a, b in itertools.pairwise(drawn)]
    assert len(drawn) >= 3  # it is drawn
    assert min(gaps) >= 0.7, gaps  # never twice in one second (ticks at 0.5 s, with their jitter)


class LapMeter:
    """A meter whose every lap is 10 J on one GPU channel; counts its boundary reads."""

    def __init__(self) -> None:
        self.begun, self.laps = 0, 0

    def begin(self, phase: str) -> None:
        self.begun += 1

    def channels(self) -> list:
        from precmon.power.base import Channel

        return [Channel("nvml:0", "nvml", "GPU", "gpu", has_energy_counter=True)]

    def lap(self, phase: str) -> list:
        from precmon.power.base import EnergyWindow

        self.laps += 1
        return [EnergyWindow("nvml:0", "gpu", phase, 4.0, 10.0, 2.5, 3.0, "counter", 5)]


def test_watch_j_per_token_closes_one_energy_window_every_few_polls_over_their_summed_tokens():
    """NVML's energy counter costs ms of CPU a read: watch mode's J/token reads it once a window
    of `Pace.jpt_polls` polls (4 s at a 1 s poll), dividing by the tokens of all those polls."""
    from precmon.servers.watch.live_rate import LiveRate
    from precmon.tui.workers.server_worker import ServerConfig, ServerWorker

    assert (Pace(1.0).jpt_polls, Pace(1.0).jpt_window_s) == (4, 4.0)
    assert (Pace(2.0).jpt_polls, Pace(0.5).jpt_polls, Pace(5.0).jpt_polls) == (2, 4, 1)
    meter = LapMeter()
    power = type("Power", (), {"measuring_meter": lambda self: meter})()
    worker = ServerWorker(lambda msg: None, Quitting(), power, ServerConfig("http://x"), 1.0, Pace(1.0).jpt_polls)  # type: ignore[arg-type]
    worker.watching = True

    def poll(tok_s: float | None):
        return worker._watch_j_per_token(None, LiveRate(tok_s, "llama.cpp /slots", 1.0, 1))

    assert poll(100.0) == (False, None) and meter.begun == 1  # the first poll opens the window
    assert [poll(t) for t in (100.0, 200.0, 300.0)] == [(False, None)] * 3 and meter.laps == 0
    assert poll(400.0) == (True, 10.0 / 1000)  # 10 J over 100+200+300+400 tokens
    assert meter.laps == 1
    # a poll without a token count makes the window's J/token n/a, never a smaller divisor
    assert [poll(t) for t in (100.0, None, 100.0, 100.0)][-1] == (True, None)
    assert meter.laps == 2
