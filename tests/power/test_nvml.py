"""NVML pure logic against a small stand-in for pynvml: per-field NotSupported degradation,
per-field nvmlReturn of field values, unified memory from /proc/meminfo, init failure reasons."""

from types import SimpleNamespace

from precmon.power.nvml import UNIFIED_NOTE, open_nvml


class NVMLError(Exception):
    pass


class NVMLError_NotSupported(NVMLError):  # noqa: N801 - the pynvml name
    pass


class NVMLError_LibraryNotFound(NVMLError):  # noqa: N801
    pass


class NVMLError_Unknown(NVMLError):  # noqa: N801
    pass


class FakeNvml:
    """Answers like pynvml for one GPU; `unsupported` names raise NotSupported, `flaky` Unknown."""

    NVMLError, NVMLError_NotSupported = NVMLError, NVMLError_NotSupported
    NVML_SUCCESS, NVML_ERROR_NOT_SUPPORTED = 0, 3
    NVML_FI_DEV_POWER_INSTANT = 186
    NVML_VALUE_TYPE_DOUBLE, NVML_VALUE_TYPE_UNSIGNED_INT, NVML_VALUE_TYPE_UNSIGNED_LONG = 0, 1, 2
    NVML_VALUE_TYPE_UNSIGNED_LONG_LONG, NVML_VALUE_TYPE_SIGNED_LONG_LONG, NVML_VALUE_TYPE_SIGNED_INT = 3, 4, 5
    NVML_TEMPERATURE_GPU, NVML_CLOCK_SM, NVML_CLOCK_MEM = 0, 1, 2

    def __init__(self, name="NVIDIA H200", unsupported=(), instant_return=0, init_error=None):
        self.name, self.unsupported, self.instant_return = name, set(unsupported), instant_return
        self.init_error = init_error
        self.calls: dict[str, int] = {}
        self.flaky: set[str] = set()
        self.energy_mj = 123_456_789

    def _answer(self, fn, value):
        self.calls[fn] = self.calls.get(fn, 0) + 1
        if fn in self.unsupported:
            raise NVMLError_NotSupported()
        if fn in self.flaky:
            raise NVMLError_Unknown()
        return value

    def nvmlInit(self):
        if self.init_error:
            raise self.init_error

    def nvmlShutdown(self):
        pass

    def nvmlDeviceGetCount(self):
        return 1

    def nvmlDeviceGetHandleByIndex(self, i):
        return f"h{i}"

    def nvmlDeviceGetName(self, h):
        return self._answer("name", self.name)

    def nvmlDeviceGetPowerUsage(self, h):
        return self._answer("power", 652_000)

    def nvmlDeviceGetTotalEnergyConsumption(self, h):
        return self._answer("energy", self.energy_mj)

    def nvmlDeviceGetFieldValues(self, h, ids):
        self._answer("fields", None)
        value = SimpleNamespace(uiVal=655_500, dVal=0.0)
        return [SimpleNamespace(fieldId=ids[0], valueType=1, nvmlReturn=self.instant_return, value=value)]

    def nvmlDeviceGetEnforcedPowerLimit(self, h):
        return self._answer("limit", 700_000)

    def nvmlDeviceGetTemperature(self, h, sensor):
        return self._answer("temp", 61)

    def nvmlDeviceGetClockInfo(self, h, clock):
        return self._answer(f"clock{clock}", {1: 1980, 2: 3201}[clock])

    def nvmlDeviceGetUtilizationRates(self, h):
        return self._answer("util", SimpleNamespace(gpu=97, memory=64))

    def nvmlDeviceGetCurrentClocksEventReasons(self, h):
        return self._answer("events", 0x4)

    def nvmlDeviceGetMemoryInfo(self, h):
        return self._answer("memory", SimpleNamespace(used=40 * 2**30, total=141 * 2**30))


def test_everything_supported():
    src, missing = open_nvml(FakeNvml())
    assert missing == []
    (ch,) = src.channels()
    assert (ch.id, ch.kind, ch.label, ch.scope, ch.has_energy_counter, ch.note) == (
        "nvml:0",
        "nvml",
        "NVIDIA H200",
        "gpu",
        True,
        "",
    )
    (s,) = src.read(full=True)
    assert s.watts == 655.5  # the instant field, not the 1 s average
    assert s.energy_j == 123_456.789
    assert s.extra == {
        "power_instant_w": 655.5,
        "power_avg_w": 652.0,
        "power_limit_w": 700.0,
        "temp_c": 61.0,
        "sm_clock_mhz": 1980.0,
        "mem_clock_mhz": 3201.0,
        "gpu_util_pct": 97.0,
        "mem_util_pct": 64.0,
        "clock_event_reasons": 4.0,
        "mem_used_bytes": 40.0 * 2**30,
        "mem_total_bytes": 141.0 * 2**30,
    }
    (fast,) = src.read(full=False)
    assert set(fast.extra) == {"power_instant_w", "power_avg_w"}
    # its counter moves in ~0.1 s steps: short windows are integrated from the instant watts
    assert ch.counter_step_s == 0.1


def test_gb10_like_degrades_per_field_and_reads_meminfo(fakeroot):
    fakeroot.write("/proc/meminfo", "MemTotal: 128000000 kB\nMemAvailable: 100000000 kB")
    nv = FakeNvml(name="NVIDIA GB10", unsupported={"memory", "limit"}, instant_return=3)
    src, _ = open_nvml(nv)
    (ch,) = src.channels()
    assert ch.note == UNIFIED_NOTE and ch.has_watts and ch.has_energy_counter
    assert ch.counter_step_s is None  # only a 1 s average to integrate: the counter stays the better
    (s,) = src.read(full=True)
    assert s.watts == 652.0  # instant field NotSupported (its own nvmlReturn): the 1 s average
    assert "power_limit_w" not in s.extra and "power_instant_w" not in s.extra
    assert s.extra["mem_used_bytes"] == 28_000_000 * 1024
    assert s.extra["mem_total_bytes"] == 128_000_000 * 1024
    assert s.extra["temp_c"] == 61.0
    src.read(full=True)
    # NotSupported is asked once (the probe), never again; the device stays
    assert nv.calls["memory"] == 1 and nv.calls["limit"] == 1 and nv.calls["fields"] == 1
    assert nv.calls["power"] == 3


def test_transient_error_drops_one_reading_only():
    nv = FakeNvml()
    src, _ = open_nvml(nv)
    nv.flaky = {"energy", "temp"}
    (s,) = src.read(full=True)
    assert s.energy_j is None and "temp_c" not in s.extra and s.watts == 655.5
    nv.flaky = set()
    (s,) = src.read(full=True)
    assert s.energy_j == 123_456.789 and s.extra["temp_c"] == 61.0


def test_no_power_at_all_means_no_watts_but_still_a_device():
    nv = FakeNvml(unsupported={"power", "fields", "energy"})
    src, _ = open_nvml(nv)
    (ch,) = src.channels()
    assert not ch.has_watts and not ch.has_energy_counter
    (s,) = src.read()
    assert s.watts is None and s.extra["gpu_util_pct"] == 97.0


def test_init_failures_have_reasons():
    src, missing = open_nvml(FakeNvml(init_error=NVMLError_LibraryNotFound()))
    assert src is None
    assert missing[0].reason == "driver missing: libnvidia-ml.so not found (no NVIDIA driver installed)"
