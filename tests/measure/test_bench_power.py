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
        s = BenchSettings(
            output_tokens=120,
            decode_prompt_tokens=16,
            prefill_tokens=[64],
            ttft_tokens=None,
            repeats=2,
            warmup=0,
            idle_s=1.2,
        )
        res = Bench(make_server(srv.url), s, meter=meter).run()
    m = res.metrics
    assert res.status == "ok", res.errors
    assert m["power_idle_w"] == pytest.approx(350.0, rel=0.02)  # system scope beats gpu
    assert m["power_decode_w"] == pytest.approx(350.0, rel=0.02)
    assert m["power_prefill_w"] == pytest.approx(350.0, rel=0.05)
    decode = [r for r in res.runs if r.phase == "decode"]
    for r in decode:
        assert r.extra.power_channel == "sys"
        windows = {w["channel"]: w for w in r.extra.power_windows}
        assert set(windows) == {"gpu:0", "sys"}
        # the whole-request windows are kept; the run's own energy is from the first token on
        assert r.extra.power_window == "first token → end of stream"
        cut = r.extra.prefill_part
        assert r.energy_j == pytest.approx(windows["sys"]["energy_j"] - cut["energy_j"], abs=1e-3)
        assert cut["avg_w"] == pytest.approx(350.0) and 0 < cut["seconds"] < 0.3
        assert windows["gpu:0"]["energy_j"] == pytest.approx(windows["sys"]["energy_j"] * 200 / 350, rel=0.03)
        assert r.power_w == pytest.approx(350.0, rel=0.02)
        assert 1.1 < r.energy_j / r.power_w < 2.5  # the ~1.2 s of decoding
        # a 1.2 s decode → one value per second of the phase, each the constant watts
        assert r.extra.power_w_per_s and all(w == pytest.approx(350.0) for w in r.extra.power_w_per_s)
    # J/token = decode-phase energy ÷ tokens decoded in it (the first token came from the prefill)
    expected = sorted(r.energy_j / (r.output_tokens - 1) for r in decode)
    assert all(r.extra.energy_tokens == r.output_tokens - 1 for r in decode)
    assert m["energy_decode_j_per_token"] == pytest.approx(sum(expected) / 2, rel=1e-3)
    assert res.power_idle is not None and res.power_idle.power_w_per_s


def test_headline_window_prefers_the_widest_scope():
    def w(cid, scope, watts):
        return EnergyWindow(cid, scope, "decode", 1.0, watts, watts, watts, "counter", 10)

    assert headline_window([w("g", "gpu", 300), w("s", "soc", 40)]).channel_id == "s"
    assert headline_window([w("g", "gpu", 300), w("p", "package", 90)]).channel_id == "p"
    assert headline_window([]) is None


def test_a_slow_prefill_is_cut_out_of_the_decode_window():
    """0.5 s of prompt processing before 1.2 s of decoding: the decode energy is that of the 1.2 s."""
    with (
        TimedServer(Behaviour(itl_s=0.01, prefill_s_per_token=0.004)) as srv,
        PowerSampler([ConstantSource("sys", "system", 100.0)], rate_hz=20) as meter,
    ):
        s = BenchSettings(
            output_tokens=120,
            decode_prompt_tokens=128,
            prefill_tokens=[],
            ttft_tokens=None,
            repeats=1,
            warmup=0,
            idle_s=0.2,
        )
        res = Bench(make_server(srv.url), s, meter=meter).run()
    (r,) = [r for r in res.runs if r.phase == "decode"]
    whole = r.extra.power_windows[0]["energy_j"]
    assert r.extra.prefill_part["seconds"] == pytest.approx(r.ttft_s, abs=0.05) and r.ttft_s > 0.4
    assert r.energy_j == pytest.approx(whole - 100.0 * r.extra.prefill_part["seconds"], abs=0.01)  # rounding
    assert r.energy_j / 100.0 == pytest.approx(119 / r.decode_tok_s, abs=0.06)  # first → last token, ~1.2 s
    assert res.metrics["power_decode_w"] == pytest.approx(100.0, rel=0.03)


def test_cut_prefill_uses_the_watts_sampled_before_the_first_token():
    """500 W while the prompt is processed, 200 W after: the decode window reads 200 W."""
    import time as _time

    from precmon.core.schema import Run
    from precmon.core.stats import decode_energy_per_token
    from precmon.measure.decode_window import cut_prefill
    from precmon.servers.base import StreamResult

    now_m, now_p = _time.monotonic(), _time.perf_counter()
    t0 = now_m - 3.0  # a request that began 3 s ago: 1 s of prefill at 500 W, 2 s of decode at 200 W
    hist = [Sample("c", t0 + 0.05 + i / 10, 500.0 if i < 10 else 200.0) for i in range(30)]

    class Meter:
        def history(self, cid, seconds):
            return [x for x in hist if x.t_s >= _time.monotonic() - seconds]

    w = EnergyWindow("c", "gpu", "decode", 3.0, 500.0 * 1 + 200.0 * 2, 300.0, 500.0, "counter", 30)
    run = Run(phase="decode", prompt_tokens=128, output_tokens=101, ok=True)
    run.power_w, run.energy_j = w.avg_watts, w.energy_j
    sres = StreamResult(sent_s=now_p - 3.0, first_text_s=now_p - 2.0)
    assert cut_prefill(Meter(), t0, w, run, sres)
    assert run.extra.prefill_part["avg_w"] == pytest.approx(500.0)
    assert run.energy_j == pytest.approx(400.0, rel=1e-3) and run.power_w == pytest.approx(200.0, rel=1e-3)
    assert decode_energy_per_token(run) == pytest.approx(4.0, rel=1e-3)
    # without the cut (older results): energy ÷ all output tokens
    assert decode_energy_per_token(Run(phase="decode", output_tokens=100, energy_j=900.0)) == pytest.approx(9.0)


def test_cut_prefill_leaves_the_run_alone_when_it_cannot_tell():
    from precmon.core.schema import Run
    from precmon.measure.decode_window import cut_prefill
    from precmon.servers.base import StreamResult

    w = EnergyWindow("c", "gpu", "decode", 1.0, 100.0, 100.0, 100.0, "counter", 10)
    run = Run(phase="decode", prompt_tokens=16, output_tokens=10, ok=True, power_w=100.0, energy_j=100.0)
    assert not cut_prefill(object(), time.monotonic() - 1, w, run, StreamResult(sent_s=0.0))  # no history
    assert run.energy_j == 100.0 and run.extra.energy_tokens is None


def test_prefill_power_is_energy_over_time_not_a_median_of_short_windows():
    from precmon.core.schema import Run
    from precmon.measure.bench import time_weighted_watts

    def run(watts, seconds):
        return Run(phase="prefill", prompt_tokens=1, output_tokens=1, ok=True, power_w=watts, energy_j=watts * seconds)

    # two 25 ms prefills that no source resolves (900 W, 130 W) and one of 1 s at 600 W
    runs = [run(900.0, 0.025), run(130.0, 0.025), run(600.0, 1.0)]
    assert time_weighted_watts(runs) == pytest.approx((22.5 + 3.25 + 600.0) / 1.05)
    assert time_weighted_watts([]) is None
    assert time_weighted_watts([Run(phase="prefill", prompt_tokens=1, output_tokens=1)]) is None


def test_cut_prefill_measures_from_the_window_edge_not_the_callers_clock():
    """A late boundary read seeds the window with the tick before t0: its 0.1 s is not decode."""
    import time as _time

    from precmon.core.schema import Run
    from precmon.measure.decode_window import cut_prefill
    from precmon.servers.base import StreamResult

    now_m, now_p = _time.monotonic(), _time.perf_counter()
    t0 = now_m - 2.0
    edge = t0 - 0.1  # the window's first reading, a tick before the request was sent
    hist = [Sample("c", edge + i / 20, 300.0) for i in range(43)]

    class Meter:
        def history(self, cid, seconds):
            return list(hist)

    w = EnergyWindow("c", "gpu", "decode", 2.1, 630.0, 300.0, 300.0, "integrated", 43, start_s=edge)
    run = Run(phase="decode", prompt_tokens=16, output_tokens=100, ok=True, power_w=300.0, energy_j=630.0)
    sres = StreamResult(sent_s=now_p - 2.0, first_text_s=now_p - 1.5)  # first token 0.5 s after sending
    assert cut_prefill(Meter(), t0, w, run, sres)
    assert run.extra.prefill_part["seconds"] == pytest.approx(0.6, abs=1e-3)  # edge → first token
    assert run.energy_j == pytest.approx(300.0 * 1.5, rel=1e-3) and run.power_w == pytest.approx(300.0)


def test_a_one_token_run_is_not_cut():
    from precmon.core.schema import Run
    from precmon.measure.decode_window import cut_prefill
    from precmon.servers.base import StreamResult

    w = EnergyWindow("c", "gpu", "decode", 1.0, 100.0, 100.0, 100.0, "integrated", 10, start_s=0.0)
    run = Run(phase="decode", prompt_tokens=16, output_tokens=1, ok=True, power_w=100.0, energy_j=100.0)
    assert not cut_prefill(object(), 0.0, w, run, StreamResult(sent_s=0.0, first_text_s=0.5))
