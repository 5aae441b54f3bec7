"""NVIDIA GPUs through NVML (the `pynvml` module of nvidia-ml-py).

Per GPU, one channel "nvml:N" (scope "gpu"). Watts are the instant power
(`NVML_FI_DEV_POWER_INSTANT`) where the GPU has it, else `nvmlDeviceGetPowerUsage`, which on
Ampere and newer is a 1-second average: too slow for a 30 ms prefill. Both are kept in the
sample extras (`power_instant_w`, `power_avg_w`). `nvmlDeviceGetTotalEnergyConsumption` (mJ
since driver load, Volta+) is the energy counter that phase windows subtract.

Any call may raise `NVMLError_NotSupported` on its own (DGX Spark GB10: no memory info, no power
limit), so every field degrades alone: a field found NotSupported is never asked again, any other
error drops that one reading. Unified-memory GPUs take memory from /proc/meminfo and say so.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ._sysfs import read_meminfo
from .base import Channel, Sample, Unavailable
from .gpu import GpuFact

# The total-energy counter advances in steps of ~0.1 s of energy (docs/benchmarks.md "Why the
# constants"), so on a 1 s decode window one step is ±8% and a 25 ms prefill window reads 0 W or
# 1000+ W; such windows are integrated from instant watts.
COUNTER_STEP_S = 0.1
KIND = "nvml"
UNIFIED_NOTE = "unified memory: memory from /proc/meminfo"


def field_value(v: Any, nvml: Any) -> float:
    """The number inside an `nvmlFieldValue_t`, according to its valueType."""
    attr = {
        nvml.NVML_VALUE_TYPE_DOUBLE: "dVal",
        nvml.NVML_VALUE_TYPE_UNSIGNED_INT: "uiVal",
        nvml.NVML_VALUE_TYPE_UNSIGNED_LONG: "ulVal",
        nvml.NVML_VALUE_TYPE_UNSIGNED_LONG_LONG: "ullVal",
        nvml.NVML_VALUE_TYPE_SIGNED_LONG_LONG: "sllVal",
        nvml.NVML_VALUE_TYPE_SIGNED_INT: "siVal",
    }.get(v.valueType, "uiVal")
    return float(getattr(v.value, attr))


@dataclass
class FieldGuard:
    """Calls NVML functions one field at a time, remembering which ones this GPU lacks."""

    nvml: Any
    unsupported: set[str] = field(default_factory=set)
    last_error: dict[str, str] = field(default_factory=dict)

    def _permanent(self) -> tuple[type[BaseException], ...]:
        names = ("NVMLError_NotSupported", "NVMLError_FunctionNotFound", "NVMLError_NoPermission")
        return tuple(getattr(self.nvml, n) for n in names if hasattr(self.nvml, n))

    def call(self, name: str, fn_name: str, *args: Any) -> Any:
        """`nvml.<fn_name>(*args)`, or None when this field is unsupported or failed this time."""
        if name in self.unsupported:
            return None
        fn: Callable[..., Any] | None = getattr(self.nvml, fn_name, None)
        if fn is None:
            self.unsupported.add(name)
            return None
        try:
            return fn(*args)
        except self._permanent() as e:
            self.unsupported.add(name)
            self.last_error[name] = str(e)
        except self.nvml.NVMLError as e:
            self.last_error[name] = str(e)
        return None

    def instant_power_w(self, handle: Any) -> float | None:
        """NVML_FI_DEV_POWER_INSTANT in watts; each field carries its own nvmlReturn."""
        fid = getattr(self.nvml, "NVML_FI_DEV_POWER_INSTANT", None)
        if fid is None:
            self.unsupported.add("power_instant")
            return None
        vals = self.call("power_instant", "nvmlDeviceGetFieldValues", handle, [fid])
        if not vals:
            return None
        v = vals[0]
        if v.nvmlReturn == self.nvml.NVML_ERROR_NOT_SUPPORTED:
            self.unsupported.add("power_instant")
            return None
        if v.nvmlReturn != self.nvml.NVML_SUCCESS:
            return None
        return field_value(v, self.nvml) / 1000.0


@dataclass
class _Gpu:
    index: int
    handle: Any
    name: str
    guard: FieldGuard
    channel: Channel | None = None
    unified_memory: bool = False


def _mw(x: Any) -> float | None:
    return None if x is None else float(x) / 1000.0


class NvmlSource:
    """All NVIDIA GPUs NVML can see; build it with `open_nvml()`."""

    kind = KIND
    blocking = True  # driver calls can stall (a GPU off the bus): the sampler gives it its own thread
    # nvmlDeviceGetTotalEnergyConsumption costs milliseconds of CPU per call (every other call here
    # costs microseconds): the sampler reads it at phase boundaries and rarely otherwise.
    expensive_counter = True

    def __init__(self, nvml: Any, gpus: list[_Gpu]) -> None:
        self.nvml = nvml
        self._gpus = gpus
        for g in gpus:  # one probing read decides which fields exist and what the channel is
            self._read_gpu(g, full=True)
            self._make_channel(g)

    def _make_channel(self, g: _Gpu) -> None:
        u = g.guard.unsupported
        g.channel = Channel(
            f"nvml:{g.index}",
            KIND,
            g.name,
            "gpu",
            has_energy_counter="energy" not in u,
            has_watts=not {"power_avg", "power_instant"} <= u,
            note=UNIFIED_NOTE if g.unified_memory else "",
            # Only with instant watts to integrate instead (a 1-second average would lag).
            counter_step_s=None if "power_instant" in u else COUNTER_STEP_S,
        )

    def channels(self) -> list[Channel]:
        return [g.channel for g in self._gpus if g.channel is not None]

    def read(self, full: bool = True, counters: bool = True) -> list[Sample]:
        return [self._read_gpu(g, full, counters) for g in self._gpus]

    def _read_gpu(self, g: _Gpu, full: bool, counters: bool = True) -> Sample:
        h, call = g.handle, g.guard.call
        t = time.monotonic()
        instant = g.guard.instant_power_w(h)
        avg = _mw(call("power_avg", "nvmlDeviceGetPowerUsage", h))
        energy_mj = call("energy", "nvmlDeviceGetTotalEnergyConsumption", h) if counters else None
        t = (t + time.monotonic()) / 2  # the middle of the reads is when they were taken
        extra: dict[str, float] = {}
        if instant is not None:
            extra["power_instant_w"] = instant
        if avg is not None:
            extra["power_avg_w"] = avg
        if full:
            self._read_extras(g, extra)
        cid = g.channel.id if g.channel else f"nvml:{g.index}"
        watts = instant if instant is not None else avg
        return Sample(cid, t, watts, None if energy_mj is None else energy_mj / 1000.0, extra)

    def _read_extras(self, g: _Gpu, extra: dict[str, float]) -> None:
        nv, h, call = self.nvml, g.handle, g.guard.call
        values = {
            "power_limit_w": _mw(call("power_limit", "nvmlDeviceGetEnforcedPowerLimit", h)),
            "temp_c": call("temp", "nvmlDeviceGetTemperature", h, nv.NVML_TEMPERATURE_GPU),
            "sm_clock_mhz": call("sm_clock", "nvmlDeviceGetClockInfo", h, nv.NVML_CLOCK_SM),
            "mem_clock_mhz": call("mem_clock", "nvmlDeviceGetClockInfo", h, nv.NVML_CLOCK_MEM),
        }
        util = call("util", "nvmlDeviceGetUtilizationRates", h)
        if util is not None:
            values["gpu_util_pct"], values["mem_util_pct"] = util.gpu, util.memory
        reasons = call("clock_events", "nvmlDeviceGetCurrentClocksEventReasons", h)
        if reasons is None and "clock_events" in g.guard.unsupported:
            reasons = call("throttle", "nvmlDeviceGetCurrentClocksThrottleReasons", h)
        values["clock_event_reasons"] = reasons  # the raw bitmask (nvmlClocksEventReason* bits)
        mem = call("memory", "nvmlDeviceGetMemoryInfo", h)
        if mem is not None:
            values["mem_used_bytes"], values["mem_total_bytes"] = mem.used, mem.total
        elif "memory" in g.guard.unsupported:
            g.unified_memory = True
            info = read_meminfo()
            if "MemTotal" in info and "MemAvailable" in info:
                values["mem_used_bytes"] = info["MemTotal"] - info["MemAvailable"]
                values["mem_total_bytes"] = info["MemTotal"]
                values["mem_from_meminfo"] = 1.0
        extra.update({k: float(v) for k, v in values.items() if v is not None})

    def gpu_facts(self) -> list[GpuFact]:
        """Each GPU's maximum SM clock and the pids holding a context on it (`power/gpu.py`)."""
        return [self._facts(g) for g in self._gpus]

    def _facts(self, g: _Gpu) -> GpuFact:
        call = g.guard.call
        max_sm = call("max_sm_clock", "nvmlDeviceGetMaxClockInfo", g.handle, self.nvml.NVML_CLOCK_SM)
        pids: set[int] | None = None
        for name, fn in (
            ("compute_procs", "nvmlDeviceGetComputeRunningProcesses"),
            ("graphics_procs", "nvmlDeviceGetGraphicsRunningProcesses"),
        ):
            procs = call(name, fn, g.handle)
            if procs is not None:
                pids = (pids or set()) | {int(p.pid) for p in procs if isinstance(getattr(p, "pid", None), int)}
        why = None
        if pids is None:
            why = g.guard.last_error.get("compute_procs") or "NVML does not list the GPU's processes"
            why = f"n/a: {why}"
        cc = call("cuda_cc", "nvmlDeviceGetCudaComputeCapability", g.handle)
        return GpuFact(
            f"nvml:{g.index}",
            g.name,
            None if max_sm is None else float(max_sm),
            None if pids is None else tuple(sorted(pids)),
            why,
            _capability(cc),
        )

    def close(self) -> None:
        try:
            self.nvml.nvmlShutdown()
        except Exception:  # noqa: BLE001 - shutting down a library that may already be gone
            pass


def _capability(cc: Any) -> str | None:
    """NVML's (major, minor) → "9.0"; None for anything else."""
    if isinstance(cc, tuple) and len(cc) == 2 and all(isinstance(x, int) and 0 <= x < 100 for x in cc):
        return f"{cc[0]}.{cc[1]}"
    return None


def _init_reason(nvml: Any, e: Exception) -> str:
    name = type(e).__name__
    if name == "NVMLError_LibraryNotFound":
        return "driver missing: libnvidia-ml.so not found (no NVIDIA driver installed)"
    if name == "NVMLError_DriverNotLoaded":
        return "no device: NVIDIA driver not loaded"
    if name == "NVMLError_NoPermission":
        return "no permission: NVML refused access to the GPU"
    return f"NVML init failed: {e}"


def open_nvml(nvml: Any = None) -> tuple[NvmlSource | None, list[Unavailable]]:
    """All GPUs NVML sees (nvml: the pynvml module, or a stand-in), with reasons for what is not."""
    if nvml is None:
        try:
            import pynvml
        except ImportError:
            return None, [Unavailable(KIND, "driver missing: pynvml (nvidia-ml-py) not installed")]
        nvml = pynvml
    try:
        nvml.nvmlInit()
    except nvml.NVMLError as e:
        return None, [Unavailable(KIND, _init_reason(nvml, e))]
    missing: list[Unavailable] = []
    gpus: list[_Gpu] = []
    try:
        count = nvml.nvmlDeviceGetCount()
    except nvml.NVMLError as e:
        count, missing = 0, [Unavailable(KIND, f"NVML device count failed: {e}")]
    for i in range(count):
        try:
            h = nvml.nvmlDeviceGetHandleByIndex(i)
        except nvml.NVMLError as e:
            missing.append(Unavailable(KIND, f"GPU {i}: {e}", f"nvml:{i}"))
            continue
        guard = FieldGuard(nvml)
        name = guard.call("name", "nvmlDeviceGetName", h)
        name = name.decode() if isinstance(name, bytes) else (name or f"GPU {i}")
        gpus.append(_Gpu(i, h, name, guard))
    if not gpus:
        try:
            nvml.nvmlShutdown()
        except nvml.NVMLError:
            pass
        return None, missing or [Unavailable(KIND, "no device: NVML sees no GPU")]
    return NvmlSource(nvml, gpus), missing
