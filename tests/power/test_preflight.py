"""The preflight (docs/design.md §4 "Preflight"): a box fit to measure gives no finding, each unfit
state gives one line with its code and what to do, and a fact that cannot be read is no finding.

Fixture trees stand in for /sys and /proc (PRECMON_SYSFS_ROOT, PRECMON_PROC_ROOT); NVML is the
fake of tests/fakes/nvml.py (an H200 at its defaults, one with a lowered limit, a GB10)."""

from __future__ import annotations

import os

import pytest

from precmon.measure.trust import preflight as pf
from precmon.measure.trust.validity import CODES
from precmon.power import box
from tests.fakes.nvml import NoDriver, gb10, h200
from tests.power.spark_tree import write_spbm

GIB_KB = 2**20  # a GiB in meminfo's kB


def _meminfo(fakeroot, swap_used_gib: float = 0.0, huge_free: int = 0, huge_total: int = 0) -> None:
    swap_total = 8 * GIB_KB
    lines = {
        "MemTotal": f"{128 * GIB_KB} kB",
        "MemAvailable": f"{100 * GIB_KB} kB",
        "SwapTotal": f"{swap_total} kB",
        "SwapFree": f"{swap_total - int(swap_used_gib * GIB_KB)} kB",
        "HugePages_Total": str(huge_total),
        "HugePages_Free": str(huge_free),
        "Hugepagesize": "2048 kB",
    }
    fakeroot.write("/proc/meminfo", "\n".join(f"{k}: {v}" for k, v in lines.items()))


def _governor(fakeroot, governor: str, driver: str) -> None:
    fakeroot.files("/sys/devices/system/cpu/cpu0/cpufreq", scaling_governor=governor, scaling_driver=driver)


def _codes(result) -> list[str]:
    return [line.split(" ", 1)[0] for line in result.findings]


def test_a_healthy_spark_gives_no_finding(fakeroot):
    write_spbm(fakeroot.root)  # the EC defaults: PL1 140 W of a 250 W ceiling is no cap
    _meminfo(fakeroot)
    _governor(fakeroot, "schedutil", "cppc_cpufreq")
    result = pf.run_preflight(nvml=gb10())  # no power limit, no memory info: facts it lacks
    assert result.findings == []
    assert result.checks["spbm_limits"] == "ok" and result.checks["gpu_power_limit"].startswith("n/a")


def test_a_spbm_cap_of_30_w_of_140_w_is_power_capped_and_the_safety_mode(fakeroot):
    d = write_spbm(fakeroot.root, caps_w={"pl1": 30.0})
    result = pf.run_preflight(nvml=NoDriver())
    capped, safe = result.findings
    assert capped.startswith("power-capped: spbm hwmon3 pl1 capped at 30 W, below its EC default 140 W, maximum 250 W")
    assert f"echo 0 | sudo tee {d / 'power11_cap'}" in capped  # the file that holds it, to reset
    assert safe.startswith("safe-mode: the DGX Spark's safety-mode signature (pl1 30 W)")
    assert result.checks["spbm_limits"] == "power-capped:"
    assert result.facts["spbm_caps_w"]["hwmon3:pl1"] == {"cap": 30.0, "max": 250.0}


def test_a_100_w_system_cap_is_power_capped_not_the_safety_mode(fakeroot):
    write_spbm(fakeroot.root, caps_w={"syspl1": 100.0})
    assert _codes(pf.run_preflight(nvml=NoDriver())) == ["power-capped:"]


def test_an_h200_at_its_default_limit_gives_no_finding_and_a_lowered_one_does(fakeroot):
    assert pf.run_preflight(nvml=h200()).findings == []
    (line,) = pf.run_preflight(nvml=h200(limit_mw=400_000)).findings
    assert line.startswith("power-capped: GPU 0 (NVIDIA H200) power limit 400 W, below its default 700 W")
    assert "nvidia-smi -i 0 -pl 700" in line


def test_slowdown_reasons_at_idle_hold_the_clocks(fakeroot):
    (line,) = pf.run_preflight(nvml=h200(reasons=0x1 | 0x8)).findings
    assert line.startswith("clocks-held: GPU 0 (NVIDIA H200) held back at idle (HW slowdown)")


def test_another_compute_job_on_the_gpu_is_found_and_the_server_is_not(fakeroot):
    me = os.getpid()
    (line,) = pf.run_preflight(nvml=h200(compute_pids=(me,))).findings
    assert line.startswith(f"gpu-busy: GPU 0 (NVIDIA H200) is in use by {me} (")
    assert pf.check(box.read_box(h200(compute_pids=(me,))), server_pids={me}).findings == []
    # a pid of another pid namespace (NVML lists the host's) is not named as another job
    assert pf.run_preflight(nvml=h200(compute_pids=(2**22 + 7,))).findings == []


@pytest.mark.parametrize(
    ("governor", "driver", "found"),
    [
        ("powersave", "acpi-cpufreq", True),
        ("powersave", "cppc_cpufreq", True),
        ("powersave", "intel_pstate", False),  # intel_pstate's powersave is a dynamic policy
        ("powersave", "amd-pstate-epp", False),
        ("performance", "acpi-cpufreq", False),
        ("schedutil", "cppc_cpufreq", False),
    ],
)
def test_the_powersave_governor_where_it_pins_the_lowest_clock(fakeroot, governor, driver, found):
    _governor(fakeroot, governor, driver)
    assert _codes(pf.run_preflight(nvml=NoDriver())) == (["cpu-powersave:"] if found else [])


def test_swap_in_use_and_free_hugepages(fakeroot):
    _meminfo(fakeroot, swap_used_gib=0.3)
    assert pf.run_preflight(nvml=NoDriver()).findings == []  # a few hundred MiB of stale pages
    _meminfo(fakeroot, swap_used_gib=2.5, huge_free=2048, huge_total=4096)
    swap, huge = pf.run_preflight(nvml=NoDriver()).findings
    assert swap.startswith("swap-used: 2.5 GiB of swap in use")
    assert huge.startswith("hugepages: 4.0 GiB of HugePages are free but reserved")
    _meminfo(fakeroot, huge_free=0, huge_total=4096)  # a pool in use is used, not hidden
    assert pf.run_preflight(nvml=NoDriver()).findings == []


def test_missing_facts_are_no_finding(fakeroot):
    """A container: no /sys files, no meminfo, no NVML driver: every check n/a, nothing found."""
    result = pf.run_preflight(nvml=NoDriver())
    assert result.findings == []
    assert all(str(v).startswith("n/a") for v in result.checks.values()), result.checks


def test_every_code_is_a_warning_code():
    assert set(pf.CODES) <= set(CODES)
