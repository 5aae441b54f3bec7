"""`measure_request` and `PhaseMeter` (measure/request.py): one timed request inside its own power
window, the window's typed `Measurement`, and the same numbers for a bench run and a
`watch --drive` request. A real PowerSampler over a constant source (watts known exactly)."""

from __future__ import annotations

import pytest

from precmon.core.phases import DECODE, PREFILL
from precmon.measure.prompts import PromptBuilder
from precmon.measure.request import DRIVE_WINDOW, PhaseMeter, measure_request
from precmon.power.sampler import PowerSampler
from precmon.servers.base import ServerError
from precmon.servers.detect import make_server
from tests.fakes.timed_server import Behaviour, TimedServer
from tests.measure.test_bench_power import ConstantSource


def test_a_request_gets_its_typed_measurement_and_the_run_its_decode_window():
    with (
        TimedServer(Behaviour(itl_s=0.01)) as srv,
        PowerSampler([ConstantSource("sys", "system", 100.0)], rate_hz=20) as meter,
    ):
        server = make_server(srv.url)
        power = PhaseMeter(meter)
        prompt = PromptBuilder(None).build(16)
        run, sres, measured = measure_request(server, power, DECODE, prompt, 40, None, 20.0, key=DRIVE_WINDOW)
        assert measured is not None and measured.headline is not None
        assert measured.phase == DECODE and [w.channel_id for w in measured.windows] == ["sys"]
        assert measured.headline.avg_watts == pytest.approx(100.0, rel=0.02)
        whole_j = measured.headline.energy_j
        measured.apply(run, meter, sres, extras=False)  # watch --drive: the numbers, no extra keys
        assert run.extra.power_windows is None and run.extra.power_window == "first token → end of stream"
        assert run.energy_j < whole_j and run.power_w == pytest.approx(100.0, rel=0.05)
        run2, sres2, measured2 = measure_request(server, power, PREFILL, PromptBuilder(None).build(32), 1, None, 20.0)
        measured2.apply(run2, meter, sres2)  # a bench run: the window's keys, whole request (prefill)
        assert run2.extra.power_channel == "sys" and run2.energy_j == pytest.approx(measured2.headline.energy_j)
        assert len(run2.extra.window_unix_s) == 2 and run2.extra.power_windows[0]["channel"] == "sys"


def test_a_failed_request_closes_its_window_unmeasured():
    class Refuses:
        kind, url = "fake", "http://x"

        def stream(self, req):
            raise ServerError("connection refused")

    with PowerSampler([ConstantSource("sys", "system", 100.0)], rate_hz=20) as meter:
        power = PhaseMeter(meter)
        with pytest.raises(ServerError):
            measure_request(Refuses(), power, DECODE, PromptBuilder(None).build(8), 4, None, 5.0)
        with pytest.raises(KeyError):  # closed: nothing left open on the meter
            meter.end(DECODE)


def test_without_a_meter_nothing_is_measured():
    power = PhaseMeter(None)
    power.begin(DECODE)
    assert power.end(DECODE) is None
