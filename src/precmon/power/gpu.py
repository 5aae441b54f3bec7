"""GPU facts that say whether a measurement ran on an undisturbed GPU.

Per-sample readings (clock-event reasons, SM clock, temperature) already travel in NVML samples'
extras (`power/nvml.py`); what is read here is asked once or twice per bench, not per sample:
the GPU's maximum SM clock and the processes that hold a compute or graphics context on it.
`measure/trust/validity.py` turns both into `gpu-throttle:`, `gpu-shared:` and `low-power:` warnings.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, runtime_checkable

# nvmlClocksEventReason* bits that mean the GPU ran slower than it could (pynvml's names). Idle,
# application clocks, sync boost and display clocks are not disturbances of a measurement.
SLOWDOWN_BITS = {
    0x4: "power cap",  # SwPowerCap: the board power limit held the clocks down
    0x8: "HW slowdown",  # HwSlowdown: external power brake or overheating, factor 2+
    0x20: "thermal (SW)",  # SwThermalSlowdown
    0x40: "thermal (HW)",  # HwThermalSlowdown
    0x80: "power brake",  # HwPowerBrakeSlowdown
}


def slowdown_reasons(mask: int) -> list[str]:
    """Names of the slowdown bits set in an `nvmlDeviceGetCurrentClocksEventReasons` mask."""
    return [name for bit, name in SLOWDOWN_BITS.items() if mask & bit]


@dataclass(frozen=True)
class GpuFact:
    """One GPU as NVML describes it at one moment.

    Attributes:
        channel_id: the power channel of the GPU ("nvml:0").
        name: NVML's name ("NVIDIA GB10").
        max_sm_clock_mhz: `nvmlDeviceGetMaxClockInfo(SM)`; None where NVML does not say.
        pids: processes with a compute or graphics context; None where NVML cannot list them.
        why_no_pids: the reason `pids` is None.
        compute_capability: CUDA's "9.0" (`nvmlDeviceGetCudaComputeCapability`); None where NVML
            does not say.
    """

    channel_id: str
    name: str
    max_sm_clock_mhz: float | None
    pids: tuple[int, ...] | None
    why_no_pids: str | None = None
    compute_capability: str | None = None


@runtime_checkable
class GpuFactsSource(Protocol):
    """A power source or meter that can describe its GPUs (NVML; the sampler passes it through)."""

    def gpu_facts(self) -> list[GpuFact]: ...


def capabilities_by_name(source: object) -> dict[str, set[str]]:
    """NVML's GPU name → the CUDA compute capabilities of the GPUs of that name here, from a source
    that describes its GPUs (the sampler, NVML); {} from any other, or when the driver fails."""
    if not isinstance(source, GpuFactsSource):
        return {}
    try:
        facts = source.gpu_facts()
    except Exception:  # noqa: BLE001 - a driver fault costs the capability, never the caller
        return {}
    out: dict[str, set[str]] = {}
    for fact in facts:
        if fact.compute_capability is not None:
            out.setdefault(fact.name, set()).add(fact.compute_capability)
    return out


def gpu_names(source: object) -> list[str]:
    """NVML's names of the GPUs a source describes (the sampler, NVML); [] from any other, or when
    the driver fails."""
    if not isinstance(source, GpuFactsSource):
        return []
    try:
        return [fact.name for fact in source.gpu_facts()]
    except Exception:  # noqa: BLE001 - a driver fault costs the names, never the caller
        return []
