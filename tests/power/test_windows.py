import pytest

from precmon.power.base import EnergyWindow, Sample
from precmon.power.windows import headline, window_from_samples


def _s(t, w, e=None):
    return Sample("c", t, w, e)


def test_integrated_trapezoid():
    w = window_from_samples([_s(0.0, 100.0), _s(1.0, 200.0), _s(2.0, 200.0)])
    assert (w.method, w.duration_s, w.energy_j, w.avg_watts, w.peak_watts, w.n_samples) == (
        "integrated",
        2.0,
        350.0,
        175.0,
        200.0,
        3,
    )


def test_counter_wins_over_integration():
    # sparse samples say 100 W, the counter knows better: 500 J in 2 s
    w = window_from_samples([_s(0.0, 100.0, 1000.0), _s(2.0, 100.0, 1500.0)])
    assert (w.method, w.energy_j, w.avg_watts, w.peak_watts) == ("counter", 500.0, 250.0, 100.0)


def test_counter_that_did_not_tick_falls_back_to_integration():
    w = window_from_samples([_s(0.0, 50.0, 7.0), _s(0.02, 70.0, 7.0)])
    assert w.method == "integrated" and w.avg_watts == pytest.approx(60.0)


def test_single_sample_is_held_over_the_phase():
    w = window_from_samples([_s(0.0, 80.0)], wall_duration_s=0.25)
    assert (w.energy_j, w.avg_watts, w.duration_s, w.n_samples) == (20.0, 80.0, 0.25, 1)


def test_repeats_and_missing_watts_are_skipped():
    w = window_from_samples([_s(0.0, 10.0), _s(0.0, 99.0), _s(0.5, None), _s(1.0, 10.0)])
    assert (w.energy_j, w.n_samples, w.peak_watts) == (10.0, 2, 10.0)
    assert window_from_samples([_s(0.0, None)]) is None


def _win(cid, scope, watts, method="counter"):
    return EnergyWindow(cid, scope, "decode", 1.0, watts, watts, watts, method, 10)


def test_headline_widest_scope_then_counter_then_larger():
    gpu, system = _win("nvml:0", "gpu", 300.0), _win("hwmon3:sys_total", "system", 40.0)
    assert headline([gpu, system]) is system
    vdd_in = _win("jetson:VDD_IN", "module", 9.0, "integrated")
    vdd_soc = _win("x:soc", "soc", 3.0, "integrated")
    assert headline([vdd_soc, vdd_in]) is vdd_in
    counted = _win("spbm:cpu_gpu", "module", 5.0)
    assert headline([vdd_in, counted]) is counted
    assert headline([]) is None


def test_counter_covering_part_of_the_phase_is_not_used():
    # the begin boundary read was late: the first counter value is mid-phase
    w = window_from_samples([_s(0.0, 100.0), _s(1.0, 100.0, 50.0), _s(2.0, 100.0, 150.0)])
    assert (w.method, w.energy_j) == ("integrated", 200.0)


def _stepped(t0, t1, watts, step_s=0.1, rate_hz=20, phase_s=0.037):
    """Samples of a constant `watts` whose energy counter advances only every `step_s` (NVML)."""
    out, n = [], int((t1 - t0) * rate_hz)
    for i in range(n + 1):
        t = t0 + i * (t1 - t0) / n
        counter = watts * step_s * int((t + phase_s) / step_s)  # the last whole step before t
        out.append(_s(t, watts, counter))
    return out


def test_coarse_counter_over_a_short_window_is_integrated_instead():
    # 1.23 s at 600 W: the stepped counter sees 12 steps (720 J, 585 W); the samples say 738 J
    samples = _stepped(10.0, 11.23, 600.0)
    plain = window_from_samples(samples)
    assert plain.method == "counter" and plain.energy_j == pytest.approx(720.0)  # the quantization error
    w = window_from_samples(samples, counter_step_s=0.1)
    assert w.method == "integrated" and w.avg_watts == pytest.approx(600.0)
    assert w.energy_j == pytest.approx(600.0 * 1.23)
    assert w.counter_energy_j == pytest.approx(720.0)  # kept beside, for the record


def test_coarse_counter_over_a_long_window_is_used():
    # 6 s = 60 steps ≥ COUNTER_MIN_STEPS (50): one step is under 2% of it, and the counter sees
    # what sparse samples miss
    samples = _stepped(0.0, 6.0, 500.0, rate_hz=2)
    w = window_from_samples(samples, counter_step_s=0.1)
    assert w.method == "counter" and w.avg_watts == pytest.approx(500.0, rel=0.02)


def test_coarse_counter_with_one_sample_is_still_used():
    w = window_from_samples([_s(0.0, 100.0, 1000.0), _s(0.5, None, 1300.0)], counter_step_s=0.1)
    assert w.method == "counter" and w.energy_j == 300.0


def test_coarse_counter_is_kept_when_the_samples_are_too_sparse():
    # a stalled sampler: only the two edge readings of a 4 s window; a straight line between two
    # instant readings is no better than a counter one step off (2.5% here)
    samples = [_s(0.0, 100.0, 0.0), _s(4.0, 900.0, 2000.0)]
    w = window_from_samples(samples, counter_step_s=0.1)
    assert w.method == "counter" and w.energy_j == 2000.0


def test_windows_know_where_they_start():
    w = window_from_samples(_stepped(10.0, 11.23, 600.0), counter_step_s=0.1)
    assert w.method == "integrated" and w.start_s == pytest.approx(10.0)
    c = window_from_samples([_s(3.0, 100.0, 1000.0), _s(5.0, 100.0, 1500.0)])
    assert c.method == "counter" and c.start_s == 3.0
