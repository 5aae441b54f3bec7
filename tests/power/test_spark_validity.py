"""The Spark's slow states from the spbm driver: `prochot:` and `power-limited:` from the status
channel's samples, the `low-power:` guess set aside where the driver is present (and labelled a
guess where it is not), and a bench against a fake server on a PROCHOT-asserted fixture Spark
whose GPU window is the energy counter's difference."""

from __future__ import annotations

import pytest

from precmon.measure.bench import Bench, BenchSettings
from precmon.measure.trust.spark import spark_checks
from precmon.measure.trust.validity import CODES, gpu_checks
from precmon.power.nvml import open_nvml
from precmon.power.sampler import PowerSampler
from precmon.power.spark import open_spbm
from precmon.servers.detect import make_server
from tests.fakes.timed_server import Behaviour, TimedServer
from tests.power.spark_tree import energy_path, gb10_nvml, write_spbm

OWN, SERVER = 1, 10
QUIET = {"prochot": 0.0, "pl_level": 1.0, "syspl1_ewma_w": 60.0, "syspl1_cap_w": 231.0, "syspl1_max_w": 300.0}


def _samples(n_hot: int, n: int = 10, **over: float) -> list[tuple[str, dict[str, float]]]:
    return [("decode", QUIET | over | ({"prochot": 1.0} if i < n_hot else {})) for i in range(n)]


def test_codes_are_validity_codes():
    assert "prochot:" in CODES and "power-limited:" in CODES


def test_quiet_spark_has_figures_and_no_warning():
    fig, warnings = spark_checks(_samples(0), "hwmon3:status")
    assert warnings == []
    assert fig["prochot_share"] == 0.0 and fig["pl_level_share"] == {"1": 1.0}
    assert fig["controllers"]["syspl1"] == {
        "ewma_w_median": 60.0,
        "cap_w_min": 231.0,
        "cap_w_max": 231.0,
        "ceiling_w": 300.0,
        "at_cap_share": 0.0,
    }


def test_prochot_in_any_sample_is_a_warning_with_its_share():
    _, (w,) = spark_checks(_samples(3), "hwmon3:status")
    assert w.startswith("prochot: spbm hwmon3 prochot asserted in 30% of 10 samples during the runs")


def test_ewma_at_the_cap_is_power_limited():
    # a Spark held to 60 W: the SysPL1 controller's EWMA sits at its cap
    fig, (w,) = spark_checks(_samples(0, syspl1_ewma_w=59.5, syspl1_cap_w=60.0), "hwmon3:status")
    assert w == (
        "power-limited: spbm hwmon3 syspl1 at ≥95% of its 60 W cap of a 300 W ceiling in 100% of 10 samples "
        "during the runs (EWMA median 60 W): the firmware held the power down, the numbers are this power state's"
    )
    assert fig["controllers"]["syspl1"]["at_cap_share"] == 1.0
    # one sample of eleven at the cap is a touch, not a limit (10% is: the threshold)
    touch = [("decode", QUIET | {"syspl1_ewma_w": 230.0})] + _samples(0, 10)
    assert spark_checks(touch)[1] == []


def test_pl_level_that_moves_is_power_limited():
    moved = _samples(0, 6) + [("decode", QUIET | {"pl_level": 3.0})] * 4
    fig, (w,) = spark_checks(moved, "hwmon3:status")
    assert w.startswith("power-limited: spbm hwmon3 pl_level changed during the runs (level 1 in 60%, 3 in 40% of 10")
    assert fig["pl_level_share"] == {"1": 0.6, "3": 0.4}


def test_no_samples_and_missing_attributes_say_na():
    assert spark_checks([], "hwmon3:status") == ({"reason": "n/a: no spbm status sample was taken during the runs"}, [])
    fig, warnings = spark_checks([("decode", {"temp_c": 40.0})] * 3)
    assert warnings == [] and fig["prochot_share"].startswith("n/a") and fig["controllers"] == {}


def _gpu(nv, spbm):
    src, _ = open_nvml(nv)
    samples = {"nvml:0": [("decode", s.watts, s.extra) for _ in range(10) for s in src.read(full=True)]}
    return gpu_checks(src.gpu_facts(), samples, [SERVER], OWN, spbm)


def test_low_power_guess_is_labelled_and_set_aside_with_the_driver():
    stuck = gb10_nvml(power_mw=29_000, sm_mhz=600)
    _, (w,) = _gpu(stuck, spbm=False)
    assert w.startswith("low-power: nvml:0 NVIDIA GB10: decode at 29 W") and "(a guess from NVML" in w
    fig, warnings = _gpu(gb10_nvml(power_mw=29_000, sm_mhz=600), spbm=True)
    assert warnings == [] and fig["nvml:0"]["low_power"].startswith("n/a: the spbm driver")


def test_bench_on_a_prochot_spark_warns_and_windows_the_gpu_by_its_counter(fakeroot, counter_writer):
    """A DGX Spark fixture (spbm 0.3.0 tree + GB10 NVML) with PROCHOT asserted and SysPL1 at a 60 W cap."""
    d = write_spbm(fakeroot.root, prochot=1, watts={"gpu": 5.0, "syspl1": 59.8}, caps_w={"syspl1": 60.0})
    spbm = open_spbm(d)
    nvml, _ = open_nvml(gb10_nvml())
    assert spbm is not None and nvml is not None
    s = BenchSettings(
        output_tokens=60, decode_prompt_tokens=16, prefill_tokens=[32], ttft_tokens=None, repeats=2, warmup=0, idle_s=0
    )
    # the GPU's accumulator advances at 30 W while its instant file reads 5 W
    with (
        counter_writer(energy_path(d, "gpu"), 30.0, start=1_000_000_000),
        TimedServer(Behaviour(itl_s=0.01)) as srv,
        PowerSampler([nvml, spbm], rate_hz=20, extras_hz=10) as meter,
    ):
        res = Bench(make_server(srv.url), s, meter=meter).run()
    assert res.status == "ok", res.errors
    warnings = res.warnings
    assert any(w.startswith("prochot: spbm hwmon3 prochot asserted in 100% of") for w in warnings), warnings
    assert any(w.startswith("power-limited: spbm hwmon3 syspl1 at ≥95% of its 60 W cap") for w in warnings), warnings
    assert not any(w.startswith("low-power:") for w in warnings)
    validity = res.validity
    assert validity["spark"]["hwmon3:status"]["samples"] > 0
    assert validity["gpu"]["nvml:0"]["low_power"].startswith("n/a: the spbm driver")
    decode = [r for r in res.runs if r.phase == "decode"]
    assert decode
    for run in decode:
        (gpu,) = [w for w in run.extra.power_windows if w["channel"] == "hwmon3:gpu"]
        assert gpu["method"] == "counter" and gpu["avg_w"] == pytest.approx(30.0, rel=0.15)
        assert run.extra.power_channel == "hwmon3:sys_total"  # the headline: the system total
