"""Discovery and `doctor` entries over a whole fixture machine: a DGX-Spark-like spbm device with
advancing energy counters, a RAPL package whose counter advances, and no NVML driver."""

import pytest
from rich.console import Console

from precmon.cli.commands.doctor_cmd import format_power_table
from precmon.power import discover
from precmon.power.doctor import power_report

KEYS = {"id", "kind", "label", "scope", "watts", "available", "reason"}


@pytest.fixture
def spark_like(fakeroot, counter_writer, monkeypatch):
    hw = fakeroot.files(
        "/sys/class/hwmon/hwmon3",
        name="spbm",
        power1_label="sys_total",
        power1_input=38_000_000,
        power2_label="gpu",
        power2_input=9_000_000,
        energy1_label="sys_total",
        energy1_input=0,
    )
    rapl = fakeroot.files(
        "/sys/class/powercap/intel-rapl:0", name="package-0", energy_uj=0, max_energy_range_uj=3_000_000
    )
    fakeroot.write("/proc/meminfo", "MemTotal: 1000 kB\nMemAvailable: 500 kB")
    no_nvml = (None, [discover.Unavailable("nvml", "driver missing: x")])
    monkeypatch.setattr(discover, "open_nvml", lambda: no_nvml)
    # sys_total draws 40 W by its counter; RAPL 12 W and wraps every 1/4 s
    rapl_writer = counter_writer(rapl / "energy_uj", 12.0, max_range=3_000_000)
    with counter_writer(hw / "energy1_input", 40.0), rapl_writer:
        yield


def test_discover_lists_sources_and_reasons(spark_like, monkeypatch):
    found = discover.discover_sources()
    try:
        assert [s.kind for s in found.sources] == ["spbm", "rapl", "host"]
        reasons = {u.kind: u.reason for u in found.unavailable}
        assert set(reasons) == {"nvml", "amdgpu", "hwmon", "jetson", "tegrastats"}
        assert reasons["amdgpu"] == "no device: no amdgpu hwmon"
    finally:
        found.close()


def test_doctor_entries(spark_like):
    entries = power_report(window_s=0.5)
    assert all(set(e) == KEYS for e in entries)
    by_id = {e["id"]: e for e in entries}
    assert by_id["hwmon3:sys_total"]["scope"] == "system"
    assert by_id["hwmon3:sys_total"]["watts"] == pytest.approx(40.0, rel=0.05)  # counter, not the 38 W file
    assert by_id["hwmon3:gpu"]["watts"] == 9.0
    assert by_id["rapl:package-0"]["watts"] == pytest.approx(12.0, rel=0.05)  # across several wraps
    assert by_id["host"]["watts"] is None and by_id["host"]["available"] is True
    assert by_id["nvml"] == {
        "id": "nvml",
        "kind": "nvml",
        "label": "nvml",
        "scope": None,
        "watts": None,
        "available": False,
        "reason": "driver missing: x",
    }
    assert [e["id"] for e in entries][:3] == ["hwmon3:sys_total", "rapl:package-0", "hwmon3:gpu"]
    detailed = power_report(window_s=0.2, details=True)
    host = next(e for e in detailed if e["id"] == "host")
    assert host["extra"]["mem_total_bytes"] > 0
    text = Console(width=120, record=True)
    text.print(format_power_table(detailed))
    out = text.export_text()
    assert "hwmon3:sys_total" in out and "driver missing: x" in out
