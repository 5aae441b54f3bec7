"""A stand-in for pynvml with one GPU of a chosen shape: an H200 (everything answers) or a GB10
(DGX Spark: no memory info, no power limit, compute capability 12.1), or no driver at all.

It answers what `power/nvml.py open_nvml` and `NvmlSource.gpu_facts` ask; a call named in
`unsupported` raises NotSupported, as the real driver does per field.
"""

from __future__ import annotations

from types import SimpleNamespace


class NVMLError(Exception):
    pass


class NVMLError_NotSupported(NVMLError):  # noqa: N801 - the pynvml name
    pass


class NVMLError_LibraryNotFound(NVMLError):  # noqa: N801
    pass


class FakeNvml:
    """One GPU named `name` with compute capability `cc`; `unsupported` calls raise NotSupported."""

    NVMLError, NVMLError_NotSupported = NVMLError, NVMLError_NotSupported
    NVML_SUCCESS, NVML_ERROR_NOT_SUPPORTED = 0, 3
    NVML_FI_DEV_POWER_INSTANT = 186
    NVML_VALUE_TYPE_DOUBLE, NVML_VALUE_TYPE_UNSIGNED_INT, NVML_VALUE_TYPE_UNSIGNED_LONG = 0, 1, 2
    NVML_VALUE_TYPE_UNSIGNED_LONG_LONG, NVML_VALUE_TYPE_SIGNED_LONG_LONG, NVML_VALUE_TYPE_SIGNED_INT = 3, 4, 5
    NVML_TEMPERATURE_GPU, NVML_CLOCK_SM, NVML_CLOCK_MEM = 0, 1, 2

    def __init__(
        self,
        name: str,
        cc: tuple[int, int],
        unsupported: tuple[str, ...] = (),
        count: int = 1,
        limit_mw: int = 700_000,
        default_limit_mw: int = 700_000,
        reasons: int = 0x1,
        compute_pids: tuple[int, ...] = (),
    ) -> None:
        """`limit_mw` is the enforced power limit, `default_limit_mw` the board's default (an H200's
        700 W both); `reasons` the clock-event mask at idle (0x1: idle); `compute_pids` the pids NVML
        lists with a compute context."""
        self.name, self.cc, self.unsupported, self.count = name, cc, set(unsupported), count
        self.limit_mw, self.default_limit_mw, self.reasons = limit_mw, default_limit_mw, reasons
        self.compute_pids = compute_pids
        self.shut = False

    def _answer(self, fn: str, value: object) -> object:
        if fn in self.unsupported:
            raise NVMLError_NotSupported()
        return value

    def nvmlInit(self) -> None:
        pass

    def nvmlShutdown(self) -> None:
        self.shut = True

    def nvmlDeviceGetCount(self) -> int:
        return self.count

    def nvmlDeviceGetHandleByIndex(self, i: int) -> str:
        return f"h{i}"

    def nvmlDeviceGetName(self, h: str) -> object:
        return self._answer("name", self.name)

    def nvmlDeviceGetPowerUsage(self, h: str) -> object:
        return self._answer("power", 11_000)

    def nvmlDeviceGetTotalEnergyConsumption(self, h: str) -> object:
        return self._answer("energy", 5_000_000)

    def nvmlDeviceGetFieldValues(self, h: str, ids: list[int]) -> object:
        self._answer("fields", None)
        value = SimpleNamespace(uiVal=11_000, dVal=0.0)
        return [SimpleNamespace(fieldId=ids[0], valueType=1, nvmlReturn=0, value=value)]

    def nvmlDeviceGetEnforcedPowerLimit(self, h: str) -> object:
        return self._answer("limit", self.limit_mw)

    def nvmlDeviceGetPowerManagementDefaultLimit(self, h: str) -> object:
        return self._answer("limit", self.default_limit_mw)

    def nvmlDeviceGetApplicationsClock(self, h: str, clock: int) -> object:
        return self._answer("app_clock", 1980)

    def nvmlDeviceGetDefaultApplicationsClock(self, h: str, clock: int) -> object:
        return self._answer("app_clock", 1980)

    def nvmlDeviceGetTemperature(self, h: str, sensor: int) -> object:
        return self._answer("temp", 41)

    def nvmlDeviceGetClockInfo(self, h: str, clock: int) -> object:
        return self._answer(f"clock{clock}", 2405)

    def nvmlDeviceGetMaxClockInfo(self, h: str, clock: int) -> object:
        return self._answer("max_clock", 3003)

    def nvmlDeviceGetUtilizationRates(self, h: str) -> object:
        return self._answer("util", SimpleNamespace(gpu=0, memory=0))

    def nvmlDeviceGetCurrentClocksEventReasons(self, h: str) -> object:
        return self._answer("events", self.reasons)

    def nvmlDeviceGetMemoryInfo(self, h: str) -> object:
        return self._answer("memory", SimpleNamespace(used=1 * 2**30, total=141 * 2**30))

    def nvmlDeviceGetComputeRunningProcesses(self, h: str) -> object:
        return self._answer("procs", [SimpleNamespace(pid=p, usedGpuMemory=2**30) for p in self.compute_pids])

    def nvmlDeviceGetGraphicsRunningProcesses(self, h: str) -> object:
        return self._answer("procs", [])

    def nvmlDeviceGetCudaComputeCapability(self, h: str) -> object:
        return self._answer("cc", self.cc)


def h200(**shape: object) -> FakeNvml:
    """An H200 at its defaults (700 W, idle); `shape`: FakeNvml's keywords (a lowered `limit_mw`)."""
    return FakeNvml("NVIDIA H200", (9, 0), **shape)  # type: ignore[arg-type]


def gb10() -> FakeNvml:
    """A DGX Spark's GB10 as its owners report NVML on it: power and clocks, no memory info, no
    power limit; compute capability 12.1."""
    return FakeNvml("NVIDIA GB10", (12, 1), unsupported=("memory", "limit", "app_clock"))


class NoDriver:
    """pynvml on a machine without the NVIDIA driver: init fails as libnvidia-ml.so is missing."""

    NVMLError = NVMLError

    def nvmlInit(self) -> None:
        raise NVMLError_LibraryNotFound("NVML Shared Library Not Found")
