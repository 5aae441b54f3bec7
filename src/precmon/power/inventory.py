"""What this machine is, for the results file's fingerprint (docs/design.md §5 `host.fingerprint`).

Two results files that disagree are often two machines that differ: another driver, another
power cap, a CPU governor left on `powersave`. These readers collect the facts that explain such
a difference. Every read is optional: a fact that cannot be read is None with the reason in
`reasons`, never an exception. Paths go through `_sysfs` (`PRECMON_SYSFS_ROOT`,
`PRECMON_PROC_ROOT`), so tests point them at a fixture tree, as for the power sources.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ._sysfs import proc_path, sysfs_path, try_read_text

GOVERNOR_PATH = "/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor"
MACHINE_ID_PATHS = ("/etc/machine-id", "/var/lib/dbus/machine-id")
TEXT_LIMIT = 200  # a CPU model or driver string longer than this is not one


@dataclass
class Inventory:
    """Facts read from this host; None where unreadable, with why in `reasons` (fact → reason)."""

    cpu_model: str | None = None
    cpu_governor: str | None = None
    machine_id: str | None = None  # only hashed into the fingerprint id, never written out
    driver_version: str | None = None
    gpus: list[dict[str, Any]] = field(default_factory=list)  # index, name, power_limit_w
    gpu_uuids: list[str] = field(default_factory=list)  # NVML's; only hashed, never written out
    reasons: dict[str, str] = field(default_factory=dict)


def _clean(text: str | None) -> str | None:
    if text is None:
        return None
    text = " ".join(text.split())[:TEXT_LIMIT]
    return text or None


def cpu_model() -> tuple[str | None, str | None]:
    """(model, reason): `model name` of /proc/cpuinfo (x86), else its `Hardware`/`Model` line (Arm)."""
    text = try_read_text(proc_path("cpuinfo"))
    if text is None:
        return None, "cpuinfo unreadable"
    found: dict[str, str] = {}
    for line in text.splitlines():
        key, sep, value = line.partition(":")
        if sep and key.strip() in ("model name", "Hardware", "Model", "cpu model") and value.strip():
            found.setdefault(key.strip(), value.strip())
    for key in ("model name", "cpu model", "Model", "Hardware"):
        if key in found:
            return _clean(found[key]), None
    return None, "cpuinfo names no CPU model"


def cpu_governor() -> tuple[str | None, str | None]:
    """(governor, reason) of cpu0: `performance`, `powersave`, `schedutil`, ..."""
    text = _clean(try_read_text(sysfs_path(GOVERNOR_PATH)))
    return (text, None) if text else (None, "no cpufreq governor (scaling_governor unreadable)")


def machine_id() -> str | None:
    """systemd's machine id, where readable: two hosts both called "vm" still differ in it."""
    for path in MACHINE_ID_PATHS:
        text = _clean(try_read_text(sysfs_path(path)))
        if text:
            return text
    return None


def nvml_inventory(
    nvml: Any = None, uuids: list[str] | None = None
) -> tuple[str | None, list[dict[str, Any]], str | None]:
    """(driver version, GPUs, reason): NVML's driver and, per GPU, its name and enforced power limit.

    `uuids`, when given, receives each GPU's UUID: an identity to hash (the fingerprint's
    `machine_id` where there is no machine-id file), kept out of the GPU list that is written out.

    Opens NVML on its own (init is reference-counted, so a running sampler is unaffected) and
    shuts it down again. `nvml` is the pynvml module or a stand-in for tests.
    """
    if nvml is None:
        try:
            import pynvml
        except ImportError:
            return None, [], "pynvml (nvidia-ml-py) not installed"
        nvml = pynvml
    try:
        nvml.nvmlInit()
    except Exception as exc:  # noqa: BLE001 - no driver, no device: a fact that is absent
        return None, [], f"NVML unavailable: {type(exc).__name__}"
    try:
        driver = _text(_try(nvml, "nvmlSystemGetDriverVersion"))
        gpus: list[dict[str, Any]] = []
        count = _try(nvml, "nvmlDeviceGetCount")
        for i in range(count if isinstance(count, int) and 0 <= count <= 64 else 0):
            handle = _try(nvml, "nvmlDeviceGetHandleByIndex", i)
            if handle is None:
                continue
            limit_mw = _try(nvml, "nvmlDeviceGetEnforcedPowerLimit", handle)
            uuid = _text(_try(nvml, "nvmlDeviceGetUUID", handle))
            if uuids is not None and uuid:
                uuids.append(uuid)
            gpus.append(
                {
                    "index": i,
                    "name": _text(_try(nvml, "nvmlDeviceGetName", handle)),
                    "power_limit_w": round(limit_mw / 1000.0, 1) if isinstance(limit_mw, (int, float)) else None,
                }
            )
        return driver, gpus, None
    finally:
        try:
            nvml.nvmlShutdown()
        except Exception:  # noqa: BLE001 - shutting down a library that may already be gone
            pass


def _try(nvml: Any, fn: str, *args: Any) -> Any:
    """One NVML call, None when it raises or is missing (NotSupported on GB10, old drivers)."""
    try:
        return getattr(nvml, fn)(*args)
    except Exception:  # noqa: BLE001 - each fact degrades alone
        return None


def _text(value: Any) -> str | None:
    if isinstance(value, bytes):
        value = value.decode("utf-8", "replace")
    return _clean(value) if isinstance(value, str) else None


def read_inventory(nvml: Any = None) -> Inventory:
    """Everything above, each read on its own."""
    inv = Inventory()
    inv.cpu_model, why = cpu_model()
    if why:
        inv.reasons["cpu_model"] = why
    inv.cpu_governor, why = cpu_governor()
    if why:
        inv.reasons["cpu_governor"] = why
    inv.machine_id = machine_id()
    if inv.machine_id is None:
        inv.reasons["machine_id"] = "no readable machine-id"
    inv.driver_version, inv.gpus, why = nvml_inventory(nvml, inv.gpu_uuids)
    if why:
        inv.reasons["gpu"] = why
    return inv
