"""host.fingerprint: CPU model and governor from a fixture /proc and /sys, GPUs and driver from an
NVML stand-in, the id telling two hosts of one name apart, every fact optional, the idle baseline."""

from __future__ import annotations

from pathlib import Path

import pytest

from precmon.core.schema import Host, PowerIdle, ServerInfo, VariantResult
from precmon.measure.results import results_document
from precmon.measure.trust import fingerprint as fpmod
from precmon.measure.trust.fingerprint import fingerprint_id, host_fingerprint, with_idle_baseline
from precmon.power.inventory import GOVERNOR_PATH, cpu_model, nvml_inventory

CPUINFO_X86 = (
    "processor\t: 0\nvendor_id\t: GenuineIntel\nmodel name\t: Intel(R) Xeon(R) Platinum 8480+\n\nprocessor\t: 1\n"
)
CPUINFO_ARM = "processor\t: 0\nBogoMIPS\t: 2000.00\nCPU implementer\t: 0x41\n\nHardware\t: NVIDIA GB10\n"


class FakeNvml:
    """pynvml's few calls the inventory makes; `fail` names raise like NotSupported."""

    class NVMLError(Exception):
        pass

    def __init__(self, gpus=("NVIDIA H200",), fail=(), init_error=False):
        self.gpus, self.fail, self.init_error = list(gpus), set(fail), init_error
        self.shutdowns = 0

    def _maybe(self, name, value):
        if name in self.fail:
            raise self.NVMLError(name)
        return value

    def nvmlInit(self):
        if self.init_error:
            raise self.NVMLError("Driver Not Loaded")

    def nvmlShutdown(self):
        self.shutdowns += 1

    def nvmlSystemGetDriverVersion(self):
        return self._maybe("driver", b"580.95.05")

    def nvmlDeviceGetCount(self):
        return len(self.gpus)

    def nvmlDeviceGetHandleByIndex(self, i):
        return i

    def nvmlDeviceGetName(self, h):
        return self._maybe("name", self.gpus[h])

    def nvmlDeviceGetEnforcedPowerLimit(self, h):
        return self._maybe("limit", 700_000)


@pytest.fixture
def root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    r = tmp_path / "root"
    (r / "proc").mkdir(parents=True)
    monkeypatch.setenv("PRECMON_SYSFS_ROOT", str(r))
    monkeypatch.setenv("PRECMON_PROC_ROOT", str(r / "proc"))
    return r


def write(root: Path, path: str, text: str) -> None:
    p = root / path.lstrip("/")
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(text)


def test_fingerprint_reads_cpu_governor_gpus_driver_and_limit(root, monkeypatch):
    write(root, "/proc/cpuinfo", CPUINFO_X86)
    write(root, GOVERNOR_PATH, "performance\n")
    write(root, "/etc/machine-id", "0123456789abcdef0123456789abcdef\n")
    monkeypatch.setattr(fpmod.socket, "gethostname", lambda: "vm")
    fp = host_fingerprint(None, nvml=FakeNvml(gpus=("NVIDIA H200", "NVIDIA H200")))
    assert fp["cpu_model"] == "Intel(R) Xeon(R) Platinum 8480+"
    assert fp["cpu_governor"] == "performance"
    assert fp["driver_version"] == "580.95.05"
    assert fp["gpus"] == [
        {"index": 0, "name": "NVIDIA H200", "power_limit_w": 700.0},
        {"index": 1, "name": "NVIDIA H200", "power_limit_w": 700.0},
    ]
    assert fp["hostname"] == "vm" and fp["idle_baseline"] is None
    assert fp["id_from"] == ["cpu_model", "driver_version", "gpu_names", "hostname", "machine_id"]
    assert fp["machine_id_from"] == "machine-id" and len(fp["machine_id"]) == 16
    assert "0123456789abcdef" not in str(fp)  # hashed, never written out
    assert len(fp["id"]) == 12 and fp["reasons"] == {"power_sources": "no power meter"}


def test_two_hosts_called_vm_get_different_ids_and_the_governor_is_not_identity(root, monkeypatch):
    monkeypatch.setattr(fpmod.socket, "gethostname", lambda: "vm")
    write(root, "/proc/cpuinfo", CPUINFO_X86)
    write(root, "/etc/machine-id", "aaaa\n")
    write(root, GOVERNOR_PATH, "powersave\n")
    first = host_fingerprint(None, nvml=FakeNvml())
    write(root, GOVERNOR_PATH, "performance\n")
    assert host_fingerprint(None, nvml=FakeNvml())["id"] == first["id"]
    write(root, "/etc/machine-id", "bbbb\n")
    assert host_fingerprint(None, nvml=FakeNvml())["id"] != first["id"]
    assert fingerprint_id({"a": 1, "b": 2}) == fingerprint_id({"b": 2, "a": 1})


def test_nothing_readable_gives_nulls_with_reasons_never_an_error(root):
    fp = host_fingerprint(None, nvml=FakeNvml(init_error=True))
    assert fp["cpu_model"] is None and fp["cpu_governor"] is None and fp["driver_version"] is None
    assert fp["gpus"] == []
    assert set(fp["reasons"]) == {"cpu_model", "cpu_governor", "machine_id", "gpu", "power_sources"}
    assert fp["reasons"]["gpu"].startswith("NVML unavailable")
    assert fp["id_from"] == ["hostname"]


def test_arm_cpuinfo_and_nvml_fields_that_fail_alone(root):
    write(root, "/proc/cpuinfo", CPUINFO_ARM)
    assert cpu_model() == ("NVIDIA GB10", None)
    nv = FakeNvml(fail={"limit", "driver"})
    driver, gpus, why = nvml_inventory(nv)
    assert driver is None and why is None and nv.shutdowns == 1
    assert gpus == [{"index": 0, "name": "NVIDIA H200", "power_limit_w": None}]


class Meter:
    rate_hz = 10.0

    def power_sources_info(self):
        return [{"id": "nvml:0", "kind": "nvml", "label": "H200", "scope": "gpu", "method": "counter"}]


def test_power_sources_carry_rate_and_method(root):
    fp = host_fingerprint(Meter(), nvml=FakeNvml())  # type: ignore[arg-type]
    assert fp["power_sources"] == [
        {"id": "nvml:0", "kind": "nvml", "scope": "gpu", "method": "counter", "rate_hz": 10.0}
    ]
    assert "power_sources" not in fp["reasons"]


def test_idle_baseline_comes_from_the_first_variant_that_measured_it(root):
    host = Host(hostname="vm", fingerprint=host_fingerprint(None, nvml=FakeNvml()))
    a = VariantResult("A", "fp16", "m", ServerInfo(kind="llamacpp"))
    b = VariantResult(
        "B", "int4", "m", ServerInfo(kind="llamacpp"), power_idle=PowerIdle(power_w=9.8, channel="nvml:0")
    )
    doc = results_document([a, b], {}, host=host)
    assert doc.host.fingerprint["idle_baseline"] == {"power_w": 9.8, "channel": "nvml:0", "variant": "B"}
    assert host.fingerprint["idle_baseline"] is None  # the caller's host is not changed
    none = with_idle_baseline(host.fingerprint, [a])
    assert none["idle_baseline"] is None
    assert none["reasons"]["idle_baseline"] == "no idle power measured"


def test_every_results_document_has_a_fingerprint(root):
    doc = results_document([], {})
    assert set(doc.host.fingerprint) >= {"id", "cpu_model", "gpus", "driver_version", "power_sources"}
