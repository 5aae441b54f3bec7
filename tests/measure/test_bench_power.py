"""Power in a measurement: idle, per-phase watts, J/token and per-second series, from a real
PowerSampler over a stand-in source whose watts are known exactly (no GPU here)."""

from __future__ import annotations

import time

import pytest

from precmon.measure.bench import Bench, BenchSettings, headline_window
from precmon.power.base import Channel, EnergyWindow, Sample
from precmon.power.sampler import PowerSampler
from precmon.servers.detect import make_server
from tests.fakes.timed_server import Behaviour, TimedServer


class ConstantSource:
    """`watts` at all times, with an exact energy counter; scope as given."""

    def __init__(self, cid: str, scope: str, watts: float) -> None:
        self.kind, self.cid, self.scope, self.watts = "fake", cid, scope, watts
        self.t0 = time.monotonic()

    def channels(self):
        return [Channel(self.cid, "fake", self.cid, self.scope, has_energy_counter=True)]

    def read(self, full=True):
        t = time.monotonic()
        return [Sample(self.cid, t, self.watts, self.watts * (t - self.t0))]

    def close(self):
        pass


def test_power_fields_of_a_bench_come_from_the_widest_scope():
    sources = [ConstantSource("gpu:0", "gpu", 200.0), ConstantSource("sys", "system", 350.0)]
    with TimedServer(Behaviour(itl_s=0.01)) as srv, PowerSampler(sources, rate_hz=20) as meter:
        s = BenchSettings(output_tokens=120, decode_prompt_tokens=16, prefill_tokens=[64], ttft_tokens=None,
                          repeats=2, warmup=0, idle_s=1.2)
        res = Bench(make_server(srv.url), s, meter=meter).run()
    m = res.metrics
    assert res.status == "ok", res.errors
    assert m["power_idle_w"] == pytest.approx(350.0, rel=0.02)  # system scope beats gpu
    assert m["power_decode_w"] == pytest.approx(350.0, rel=0.02)
    assert m["power_prefill_w"] == pytest.approx(350.0, rel=0.05)
    decode = [r for r in res.runs if r.phase == "decode"]
    for r in decode:
        assert r.extra["power_channel"] == "sys"
        windows = {w["channel"]: w for w in r.extra["power_windows"]}
        assert set(windows) == {"gpu:0", "sys"}
        assert r.energy_j == pytest.approx(windows["sys"]["energy_j"], abs=1e-3)
        assert windows["gpu:0"]["energy_j"] == pytest.approx(r.energy_j * 200 / 350, rel=0.03)
        assert 1.1 < r.energy_j / r.power_w < 2.5  # the window spans the ~1.2 s request
        # a 1.2 s decode → one value per second of the phase, each the constant watts
        assert r.extra["power_w_per_s"] and all(w == pytest.approx(350.0) for w in r.extra["power_w_per_s"])
    # J/token = decode-phase energy ÷ tokens decoded
    expected = sorted(r.energy_j / r.output_tokens for r in decode)
    assert m["energy_decode_j_per_token"] == pytest.approx(sum(expected) / 2, rel=1e-3)
    assert res.extra["power_idle"]["power_w_per_s"]


def test_headline_window_prefers_the_widest_scope():
    def w(cid, scope, watts):
        return EnergyWindow(cid, scope, "decode", 1.0, watts, watts, watts, "counter", 10)

    assert headline_window([w("g", "gpu", 300), w("s", "soc", 40)]).channel_id == "s"
    assert headline_window([w("g", "gpu", 300), w("p", "package", 90)]).channel_id == "p"
    assert headline_window([]) is None
