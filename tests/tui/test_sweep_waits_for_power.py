"""A sweep started at mount waits for the power sources to open: on the H200, `PrecmonApp(auto_sweep=True)`
began before NVML was open and measured the whole sweep without power (every power row n/a, no
`power_sources`) beside a live 224 W Power panel."""

from __future__ import annotations

import asyncio
import json
import threading
import time

from precmon.tui.app import PrecmonApp
from precmon.tui.config import TuiConfig
from precmon.tui.workers.background import Quitting
from precmon.tui.workers.power_worker import PowerWorker
from tests.fakes.timed_server import Behaviour, TimedServer
from tests.tui.conftest import frozen_meter_factory, wait_for


def _slow_factory(delay_s: float):
    def factory():
        time.sleep(delay_s)  # NVML's first init, a slow sysfs read
        return frozen_meter_factory()

    return factory


def test_an_auto_sweep_measures_with_the_power_sources_that_open_late(tmp_path):
    spec = tmp_path / "sweep.toml"
    with TimedServer(Behaviour(itl_s=0.002)) as srv:
        spec.write_text(
            "[defaults]\ncooldown_s = 0\nidle_s = 0\nwarmup = 0\nrepeats = 2\noutput_tokens = 16\n"
            "decode_prompt_tokens = 16\nprefill_tokens = [32]\nttft_tokens = 32\n"
            f'[[variant]]\nlabel = "one"\nprecision = "int4"\nurl = "{srv.url}"\n'
        )

        async def scenario() -> None:
            app = PrecmonApp(
                TuiConfig(sweep_spec=str(spec), out_dir=tmp_path / "out", auto_sweep=True),
                meter_factory=_slow_factory(1.5),
            )
            async with app.run_test(size=(120, 40)) as pilot:
                assert await wait_for(pilot, lambda: (tmp_path / "out" / "results.json").exists(), 60)
                await wait_for(pilot, lambda: app.measuring is None, 30)
                app.exit(0)

        asyncio.run(scenario())
    doc = json.loads((tmp_path / "out" / "results.json").read_text())
    # the sweep got the meter (the frozen fake has watts but no energy windows: its power rows stay n/a)
    assert [s["id"] for s in doc["host"]["power_sources"]], doc["host"]


def test_wait_ready_is_bounded_and_quitting_ends_it():
    quitting = Quitting()
    hang = threading.Event()
    worker = PowerWorker(lambda m: None, quitting, lambda: (hang.wait(30), [], None)[1:] and (None, [], None))
    worker.start()
    t0 = time.monotonic()
    assert worker.wait_ready(0.3) is False and time.monotonic() - t0 < 2.0
    threading.Timer(0.2, quitting.set).start()
    t0 = time.monotonic()
    assert worker.wait_ready(30) is False and time.monotonic() - t0 < 2.0
    hang.set()
    ready = PowerWorker(lambda m: None, Quitting(), frozen_meter_factory)
    ready.start()
    assert ready.wait_ready(5) is True and ready.meter is not None
