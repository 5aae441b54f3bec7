"""`metrics_stats` and the `noisy:` warning against values worked out by hand (docs/design.md §8)."""

import math

import pytest

from precmon.core.schema import Run, RunExtra
from precmon.core.stats import (
    describe,
    half_width,
    metrics_stats,
    overlaps,
    relative_half_width,
    t975,
)
from precmon.measure.trust.validity import noisy_warnings


def test_t_quantiles_from_the_table_and_between_its_rows():
    assert t975(2) == 4.303  # n = 3 runs
    assert t975(30) == 2.042
    # 35: between 30 (2.042) and 40 (2.021), linear in 1/df: f = (1/30 - 1/35) / (1/30 - 1/40) = 4/7
    assert t975(35) == pytest.approx(2.042 - 0.021 * 4 / 7)
    # 240: between 120 (1.980) and infinity (1.960), f = (1/120 - 1/240) / (1/120) = 1/2
    assert t975(240) == pytest.approx(1.970)
    with pytest.raises(ValueError):
        t975(0)


def test_describe_three_runs():
    # mean 12; deviations -2, 0, 2 → s = sqrt(8 / 2) = 2; cv = 2/12; half = 4.303 * 2 / sqrt(3) = 4.96868
    st = describe([10.0, 14.0, 12.0])
    assert st is not None
    assert st["n"] == 3 and st["median"] == 12.0 and st["mean"] == 12.0 and st["stdev"] == pytest.approx(2.0)
    assert st["cv"] == pytest.approx(0.1667)
    assert st["ci95"] == pytest.approx([12 - 4.96868, 12 + 4.96868], abs=1e-5)
    assert describe([10.0, 14.0, 12.0], digits=2)["ci95"] == [7.03, 16.97]
    assert half_width(st) == pytest.approx(4.96868, abs=1e-5)
    assert relative_half_width(st) == pytest.approx(4.96868 / 12, abs=1e-6)


def test_describe_four_runs_and_edge_cases():
    # mean 100.25; squared deviations .0625 + 3.0625 + 5.0625 + .5625 = 8.75 → s = sqrt(8.75/3) = 1.707825
    # half = 3.182 * 1.707825 / 2 = 2.717150
    st = describe([100.0, 102.0, 98.0, 101.0], digits=3)
    assert st == {"n": 4, "median": 100.5, "mean": 100.25, "stdev": 1.708, "cv": 0.017, "ci95": [97.533, 102.967]}
    one = describe([5.0, None, math.nan])
    assert one == {"n": 1, "median": 5.0, "mean": 5.0, "stdev": None, "cv": None, "ci95": None}
    assert describe([]) is None and describe([None]) is None
    assert half_width(one) is None and relative_half_width(one) is None
    assert describe([0.0, 0.0])["cv"] is None  # no cv of a zero mean


def test_overlap_of_intervals():
    a = {"ci95": [10.0, 12.0]}
    assert overlaps(a, {"ci95": [11.5, 13.0]}) is True
    assert overlaps(a, {"ci95": [12.0, 13.0]}) is True  # touching counts as inside the noise
    assert overlaps(a, {"ci95": [12.5, 13.0]}) is False
    assert overlaps(a, {"ci95": None}) is None and overlaps(None, a) is None


def _run(phase, **kw):
    return Run(phase, **kw)


def test_metrics_stats_of_a_variant():
    runs = [
        _run("warmup", decode_tok_s=1.0),
        _run("decode", decode_tok_s=100.0, itl_ms_p50=2.0, itl_ms_p99=4.0, power_w=30.0, energy_j=2.0,
             output_tokens=11, extra=RunExtra(energy_tokens=10)),
        _run("decode", decode_tok_s=110.0, itl_ms_p50=2.0, itl_ms_p99=6.0, power_w=32.0, energy_j=3.0,
             output_tokens=11, extra=RunExtra(energy_tokens=10)),
        _run("decode", decode_tok_s=90.0, ok=False, reason="bad"),  # excluded
        _run("prefill", target_prompt_tokens=512, prefill_ms_per_token=0.5, ttft_s=0.256),
        _run("prefill", target_prompt_tokens=512, prefill_ms_per_token=0.7, ttft_s=0.358),
        _run("prefill", target_prompt_tokens=4096, prefill_ms_per_token=0.4),
        _run("ttft", target_prompt_tokens=8192, ttft_s=2.0),
        _run("ttft", target_prompt_tokens=8192, ttft_s=2.2),
    ]  # fmt: skip
    st = metrics_stats(runs)
    assert set(st) == {
        "decode_tok_s",
        "itl_ms_p50",
        "itl_ms_p99",
        "power_decode_w",
        "energy_decode_j_per_token",
        "prefill_ms_per_token:512",
        "prefill_ms_per_token:4096",
        "ttft_s:8192",
    }
    # 100 and 110: mean 105, s = sqrt(50) = 7.0711; two runs make no interval (t = 12.7 would
    # give 41.47…168.53, and for the energy 2/10 and 3/10 J/token −0.3853…0.8853: below zero)
    assert st["decode_tok_s"] == {
        "n": 2, "median": 105.0, "mean": 105.0, "stdev": 7.07, "cv": 0.0673, "ci95": None,
    }  # fmt: skip
    assert st["energy_decode_j_per_token"]["ci95"] is None
    assert st["prefill_ms_per_token:512"]["median"] == 0.6
    assert st["prefill_ms_per_token:4096"] == {
        "n": 1, "median": 0.4, "mean": 0.4, "stdev": None, "cv": None, "ci95": None,
    }  # fmt: skip
    assert st["ttft_s:8192"]["mean"] == 2.1
    assert metrics_stats([]) == {}


def test_noisy_warnings_name_metric_spread_and_threshold():
    stats = {
        "decode_tok_s": {"n": 3, "cv": 0.142},
        "prefill_ms_per_token:4096": {"n": 3, "cv": 0.10},  # at the threshold: not flagged
        "itl_ms_p99": {"n": 3, "cv": 0.9},  # chunk-gap tails vary by nature
        "ttft_s:8192": {"n": 1, "cv": None},
    }
    assert noisy_warnings(stats) == ["noisy: decode_tok_s varies 14% run to run (cv over 3 runs; threshold 10%)"]
    assert noisy_warnings({}) == []


def test_the_interval_of_a_positive_quantity_never_reaches_below_zero():
    """bench --quick printed decode 214 tok/s with a 95% interval of −96…524 (n = 2)."""
    assert describe([214.0, 120.0])["ci95"] is None  # n = 2: too few runs for an interval
    st = describe([1.0, 9.0, 2.0])  # mean 4, s = 4.36, half = 4.303 * 4.36 / sqrt(3) = 10.83
    assert st["ci95"] == pytest.approx([0.0, 14.829], abs=1e-3)
    signed = describe([-1.0, 9.0, 2.0])  # a quantity that can be negative keeps its interval
    assert signed["ci95"][0] < 0
