"""The state of this box before a measurement: power limits, idle clocks, who holds the GPU, the CPU
governor, swap and HugePages (docs/design.md §4 "Preflight").

Only facts are read here, each on its own and each optional: a file that is missing (a container,
a CPU box without NVML, a kernel without cpufreq) or a call NVML does not support leaves that fact
out, never raises. `measure/trust/preflight.py` decides what the facts mean. Paths go through
`_sysfs` (`PRECMON_SYSFS_ROOT`, `PRECMON_PROC_ROOT`), so tests point them at fixture trees; NVML
is `load_nvml()`'s, which tests replace with a fake.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ._sysfs import proc_path, read_meminfo, sysfs_path, try_read_text
from .nvml import FieldGuard
from .spark import find_spbm, layout, open_spbm

GOVERNOR = "/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor"
SCALING_DRIVER = "/sys/devices/system/cpu/cpu0/cpufreq/scaling_driver"
#: NVML's clock-event reasons are read this many times, this far apart: one read is one moment.
REASON_READS = 3
REASON_GAP_S = 0.1


@dataclass(frozen=True)
class SpbmLimit:
    """One spbm power-limit controller: its cap now and the firmware's ceiling (`_max`), watts."""

    device: str  # the hwmon directory's name ("hwmon3")
    controller: str  # "pl1", "pl2", "syspl1", "syspl2"
    cap_w: float
    max_w: float | None
    cap_file: str  # the `power<i>_cap` file that holds it (writing 0 restores the EC default)


@dataclass
class NvmlGpu:
    """One GPU as NVML describes it at idle; None where NVML does not say."""

    index: int
    name: str
    enforced_limit_w: float | None = None
    default_limit_w: float | None = None
    reasons: list[int] = field(default_factory=list)  # clock-event masks, REASON_READS of them
    app_clock_mhz: float | None = None
    default_app_clock_mhz: float | None = None
    compute_pids: list[int] | None = None  # None: NVML cannot list them here
    graphics_pids: list[int] | None = None
    memory_total_bytes: int | None = None  # None on unified memory (GB10)


@dataclass
class BoxFacts:
    """Everything `read_box` found; `reasons` says why a fact is missing (fact → why)."""

    spbm: list[SpbmLimit] = field(default_factory=list)
    spbm_present: bool = False
    gpus: list[NvmlGpu] = field(default_factory=list)
    governor: str | None = None
    scaling_driver: str | None = None
    meminfo: dict[str, int] = field(default_factory=dict)
    reasons: dict[str, str] = field(default_factory=dict)


def load_nvml() -> Any:
    """The pynvml module; None where it is not installed (tests replace this with a fake)."""
    try:
        import pynvml
    except ImportError:
        return None
    return pynvml


def spbm_limits() -> tuple[list[SpbmLimit], bool]:
    """The spbm controllers' caps and ceilings, and whether the driver is here at all."""
    out = []
    dirs = find_spbm()
    for d in dirs:
        src = open_spbm(d)
        if src is None:
            continue
        status = next((s.extra for s in src.read(full=True) if s.channel_id == src.status_channel.id), {})
        for c in layout.CONTROLLERS:
            cap, path = status.get(f"{c}_cap_w"), src.status.every_tick.get(f"{c}_cap_w")
            if isinstance(cap, float) and path is not None:
                out.append(SpbmLimit(d.name, c, cap, status.get(f"{c}_max_w"), str(path)))
    return out, bool(dirs)


def _mw(x: Any) -> float | None:
    return float(x) / 1000.0 if isinstance(x, (int, float)) and not isinstance(x, bool) and x > 0 else None


def _pids(procs: Any) -> list[int] | None:
    if procs is None:
        return None
    return sorted({int(p.pid) for p in procs if isinstance(getattr(p, "pid", None), int)})


def _gpu(nvml: Any, index: int) -> NvmlGpu | None:
    guard = FieldGuard(nvml)
    handle = guard.call("handle", "nvmlDeviceGetHandleByIndex", index)
    if handle is None:
        return None
    call = guard.call
    name = call("name", "nvmlDeviceGetName", handle)
    name = name.decode() if isinstance(name, bytes) else str(name or f"GPU {index}")
    sm = getattr(nvml, "NVML_CLOCK_SM", 1)
    mem = call("memory", "nvmlDeviceGetMemoryInfo", handle)
    app, default_app = (
        call("app_clock", "nvmlDeviceGetApplicationsClock", handle, sm),
        call("default_app_clock", "nvmlDeviceGetDefaultApplicationsClock", handle, sm),
    )
    gpu = NvmlGpu(
        index,
        name,
        enforced_limit_w=_mw(call("limit", "nvmlDeviceGetEnforcedPowerLimit", handle)),
        default_limit_w=_mw(call("default_limit", "nvmlDeviceGetPowerManagementDefaultLimit", handle)),
        app_clock_mhz=float(app) if isinstance(app, int) and app > 0 else None,
        default_app_clock_mhz=float(default_app) if isinstance(default_app, int) and default_app > 0 else None,
        compute_pids=_pids(call("compute_procs", "nvmlDeviceGetComputeRunningProcesses", handle)),
        graphics_pids=_pids(call("graphics_procs", "nvmlDeviceGetGraphicsRunningProcesses", handle)),
        memory_total_bytes=int(mem.total) if mem is not None and getattr(mem, "total", 0) > 0 else None,
    )
    for n in range(REASON_READS):
        if n:
            time.sleep(REASON_GAP_S)
        mask = call("reasons", "nvmlDeviceGetCurrentClocksEventReasons", handle)
        if mask is None and "reasons" in guard.unsupported:
            mask = call("throttle", "nvmlDeviceGetCurrentClocksThrottleReasons", handle)
        if not isinstance(mask, int):
            break  # not supported here: no second try
        gpu.reasons.append(mask)
    return gpu


def nvml_gpus(nvml: Any = None) -> tuple[list[NvmlGpu], str | None]:
    """Every GPU NVML sees, described at idle; ([], why) where there is none or no NVML."""
    nvml = nvml if nvml is not None else load_nvml()
    if nvml is None:
        return [], "no NVML: pynvml (nvidia-ml-py) not installed"
    try:
        nvml.nvmlInit()
    except Exception as exc:  # noqa: BLE001 - no driver, no device: a fact that is absent
        return [], f"no NVML: {type(exc).__name__}"
    try:
        count = nvml.nvmlDeviceGetCount()
        gpus = [g for i in range(count if isinstance(count, int) else 0) if (g := _gpu(nvml, i)) is not None]
    except Exception as exc:  # noqa: BLE001 - a driver fault costs the GPU facts, never the caller
        return [], f"NVML failed: {type(exc).__name__}"
    finally:
        try:
            nvml.nvmlShutdown()
        except Exception:  # noqa: BLE001 - shutting down a library that may already be gone
            pass
    return gpus, None if gpus else "NVML sees no GPU"


def read_box(nvml: Any = None) -> BoxFacts:
    """This box's facts now (about REASON_READS × REASON_GAP_S with a GPU, milliseconds without)."""
    facts = BoxFacts()
    facts.spbm, facts.spbm_present = spbm_limits()
    facts.gpus, why = nvml_gpus(nvml)
    if why:
        facts.reasons["gpu"] = why
    facts.governor = try_read_text(sysfs_path(GOVERNOR)) or None
    facts.scaling_driver = try_read_text(sysfs_path(SCALING_DRIVER)) or None
    if facts.governor is None:
        facts.reasons["governor"] = "no cpufreq governor (scaling_governor unreadable)"
    facts.meminfo = read_meminfo()
    if not facts.meminfo:
        facts.reasons["meminfo"] = f"{proc_path('meminfo')} unreadable"
    return facts


def gpu_memory(nvml: Any = None) -> list[tuple[str, int]]:
    """(name, total bytes) of each GPU whose memory NVML reports; [] without NVML and on unified
    memory (GB10 answers NotSupported: its memory is the host's, /proc/meminfo's)."""
    nvml = nvml if nvml is not None else load_nvml()
    if nvml is None:
        return []
    try:
        nvml.nvmlInit()
    except Exception:  # noqa: BLE001 - no driver: no GPU memory
        return []
    out = []
    try:
        guard = FieldGuard(nvml)
        count = guard.call("count", "nvmlDeviceGetCount")
        for i in range(count if isinstance(count, int) else 0):
            handle = guard.call("handle", "nvmlDeviceGetHandleByIndex", i)
            mem = guard.call("memory", "nvmlDeviceGetMemoryInfo", handle) if handle is not None else None
            total = getattr(mem, "total", None)
            if isinstance(total, int) and total > 0:
                name = guard.call("name", "nvmlDeviceGetName", handle)
                out.append((name.decode() if isinstance(name, bytes) else str(name or f"GPU {i}"), total))
    finally:
        try:
            nvml.nvmlShutdown()
        except Exception:  # noqa: BLE001 - shutting down a library that may already be gone
            pass
    return out


def meminfo_now() -> dict[str, int]:
    """/proc/meminfo now, bytes per key (HugePages_* are page counts); {} where unreadable."""
    return read_meminfo()


def hugepages_free_bytes(meminfo: Mapping[str, int]) -> int:
    """Free pages of the HugePages pool, bytes: memory MemAvailable does not count (0: none)."""
    # HugePages_* are page counts, Hugepagesize a size (read_meminfo scaled it from kB)
    return max(meminfo.get("HugePages_Free", 0), 0) * max(meminfo.get("Hugepagesize", 0), 0)


def rss_anon_bytes(pid: int) -> int | None:
    """A process's anonymous resident memory (`RssAnon` of /proc/PID/status): what it holds beyond
    the file pages MemAvailable already counts as reclaimable (a llama-server's mmap'd weights)."""
    text = try_read_text(proc_path(f"{pid}/status"))
    for line in (text or "").splitlines():
        if line.startswith("RssAnon:"):
            parts = line.split()
            if len(parts) >= 2 and parts[1].isdigit():
                return int(parts[1]) * 1024
    return None


__all__ = [
    "BoxFacts",
    "gpu_memory",
    "NvmlGpu",
    "SpbmLimit",
    "hugepages_free_bytes",
    "load_nvml",
    "meminfo_now",
    "nvml_gpus",
    "read_box",
    "rss_anon_bytes",
]
