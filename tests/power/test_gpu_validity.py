"""GPU validity through the NVML fake: throttle reasons, other processes, GB10 low power, and
NVML that cannot tell (n/a, never a crash). From the source's facts and samples to the warnings
of measure/trust/validity.py, and through a real bench with a PowerSampler over the fake."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from precmon.core.schema import to_json
from precmon.measure.bench import Bench, BenchSettings
from precmon.measure.trust.validity import gpu_checks
from precmon.power.nvml import open_nvml
from precmon.power.sampler import PowerSampler
from precmon.servers.detect import make_server
from tests.fakes.timed_server import Behaviour, TimedServer
from tests.power.test_nvml import FakeNvml

OWN, SERVER, OTHER = 1, 10, 20


class GpuFake(FakeNvml):
    """FakeNvml with a maximum SM clock, running processes and settable readings."""

    def __init__(self, *, events=0x0, sm_mhz=1980, max_sm_mhz=1980, power_mw=652_000, pids=(SERVER,), **kw):
        super().__init__(**kw)
        self.events, self.sm_mhz, self.max_sm_mhz, self.power_mw, self.pids = events, sm_mhz, max_sm_mhz, power_mw, pids

    def nvmlDeviceGetCurrentClocksEventReasons(self, h):
        return self._answer("events", self.events)

    def nvmlDeviceGetClockInfo(self, h, clock):
        return self._answer(f"clock{clock}", {1: self.sm_mhz, 2: 3201}[clock])

    def nvmlDeviceGetMaxClockInfo(self, h, clock):
        return self._answer("max_clock", self.max_sm_mhz)

    def nvmlDeviceGetPowerUsage(self, h):
        return self._answer("power", self.power_mw)

    def nvmlDeviceGetComputeRunningProcesses(self, h):
        return self._answer("procs", [SimpleNamespace(pid=p, usedGpuMemory=1) for p in self.pids])

    def nvmlDeviceGetGraphicsRunningProcesses(self, h):
        return self._answer("gprocs", [])


def _check(nv, phase="decode", n=10, server_pids=(SERVER,)):
    src, _ = open_nvml(nv)
    samples = {"nvml:0": [(phase, s.watts, s.extra) for _ in range(n) for s in src.read(full=True)]}
    return gpu_checks(src.gpu_facts(), samples, list(server_pids), OWN)


def test_quiet_gpu_has_figures_and_no_warning():
    figures, warnings = _check(GpuFake())
    assert warnings == []
    g = figures["nvml:0"]
    assert g["max_sm_clock_mhz"] == 1980.0 and g["sm_clock_ratio"] == 1.0 and g["temp_c_max"] == 61.0
    assert g["slowdown_share"] == {} and g["other_pids"] == []


def test_power_cap_and_thermal_reasons_are_gpu_throttle():
    figures, (w,) = _check(GpuFake(events=0x4 | 0x40, sm_mhz=1400))
    assert w == (
        "gpu-throttle: nvml:0 NVIDIA H200: power cap in 100% of samples, thermal (HW) in 100% of samples "
        "during the runs (SM clock 1400 of 1980 MHz, up to 61 °C)"
    )
    assert figures["nvml:0"]["sm_clock_ratio"] == 0.707
    # idle (0x1) and application clocks (0x2) are not slowdowns
    assert _check(GpuFake(events=0x1 | 0x2))[1] == []


def test_other_process_on_the_gpu_is_gpu_shared():
    figures, (w,) = _check(GpuFake(pids=(SERVER, OTHER, OWN)))
    assert (
        w
        == "gpu-shared: nvml:0 NVIDIA H200: other processes held the GPU during the runs (pid 20): its time was shared"
    )
    assert figures["nvml:0"]["other_pids"] == [OTHER]
    # NVML pids of another pid namespace (a container): one of them is taken to be the server
    _, (w,) = _check(GpuFake(pids=(5001, 5002)))
    assert "2 processes where the server is one" in w
    assert _check(GpuFake(pids=(5001,)))[1] == []


def test_gb10_low_usb_pd_power_state_is_low_power():
    nv = GpuFake(
        name="NVIDIA GB10",
        instant_return=3,
        unsupported={"memory", "limit"},
        power_mw=29_000,
        sm_mhz=600,
        max_sm_mhz=2418,
    )
    figures, warnings = _check(nv)
    (w,) = [x for x in warnings if x.startswith("low-power:")]
    assert w.startswith("low-power: nvml:0 NVIDIA GB10: decode at 29 W with the SM clock at 25% of its maximum")
    assert figures["nvml:0"]["low_power"] is True and figures["nvml:0"]["decode_watts_median"] == 29.0
    # a healthy Spark: more watts at full clock; and low watts at full clock (a tiny model) is fine too
    assert _check(GpuFake(name="NVIDIA GB10", instant_return=3, power_mw=60_000, sm_mhz=2400, max_sm_mhz=2418))[1] == []
    assert _check(GpuFake(name="NVIDIA GB10", instant_return=3, power_mw=29_000, sm_mhz=2400, max_sm_mhz=2418))[1] == []
    # not a GB10: never low-power
    assert _check(GpuFake(instant_return=3, power_mw=29_000, sm_mhz=600, max_sm_mhz=2418))[1] == []


def test_nvml_without_the_facts_says_na():
    nv = GpuFake(
        name="NVIDIA GB10", instant_return=3, unsupported={"events", "throttle", "max_clock", "procs", "gprocs"}
    )
    figures, warnings = _check(nv)
    g = figures["nvml:0"]
    assert warnings == []
    assert g["slowdown_share"] == "n/a: NVML reported no clock-event reasons"
    assert g["other_pids"].startswith("n/a: ")
    assert g["low_power"] == "n/a: needs decode watts and SM clock with its maximum"
    assert gpu_checks([], {}, None, OWN) == ({"reason": "n/a: no GPU seen through NVML"}, [])


def test_bench_with_a_throttled_gpu_keeps_status_ok_and_warns():
    src, _ = open_nvml(GpuFake(events=0x4))
    s = BenchSettings(
        output_tokens=60, decode_prompt_tokens=16, prefill_tokens=[32], ttft_tokens=None, repeats=2, warmup=0, idle_s=0
    )
    with TimedServer(Behaviour(itl_s=0.01)) as srv, PowerSampler([src], rate_hz=20, extras_hz=10) as meter:
        res = Bench(make_server(srv.url), s, meter=meter).run()
    assert res.status == "ok", res.errors
    assert any(w.startswith("gpu-throttle: nvml:0 NVIDIA H200: power cap in 100%") for w in res.warnings)
    gpu = res.validity["gpu"]["nvml:0"]
    assert gpu["samples"] > 0 and gpu["slowdown_share"] == {"power cap": 1.0}
    doc = to_json(res)
    assert doc["warnings"] == res.warnings and doc["validity"]["gpu"]["nvml:0"]["name"] == "NVIDIA H200"


@pytest.mark.parametrize("bad", [RuntimeError("driver fell off the bus")])
def test_a_failing_facts_call_costs_the_facts_only(bad):
    class Broken(GpuFake):
        def nvmlDeviceGetMaxClockInfo(self, h):
            raise bad

    src, _ = open_nvml(Broken())
    meter = PowerSampler([src])
    assert meter.gpu_facts() == []  # never an exception into the bench
