"""TUI test helpers: a frozen power meter (fixed data, for deterministic snapshots), the real
CPU results document, and a fast BenchSettings for benches against the TimedServer."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from precmon.core.settings import BenchSettings
from precmon.power.base import Channel, Sample, Unavailable

DATA = Path(__file__).parent / "data"

CHANNELS = [
    Channel("nvml:0", "nvml", "NVIDIA GB10", "gpu", has_energy_counter=True),
    Channel("hwmon3:sys_total", "spbm", "sys_total", "system"),
    Channel("host", "host", "host CPU + memory", "system", has_watts=False, note="psutil"),
]
WATTS = {
    "nvml:0": [11.0, 12.5, 30.2, 31.0, 30.8, 29.9, 12.0, 11.2] * 3,
    "hwmon3:sys_total": [24.0, 25.1, 38.0, 39.2, 38.7, 38.1, 25.0, 24.2] * 3,
}
EXTRA = {
    "nvml:0": {
        "gpu_util_pct": 87.0,
        "sm_clock_mhz": 2418.0,
        "temp_c": 61.0,
        "mem_used_bytes": 21.4e9,
        "mem_total_bytes": 128.5e9,
    },
    "host": {"cpu_util_pct": 12.0, "mem_used_bytes": 30.1e9, "mem_total_bytes": 128.5e9},
}
UNAVAILABLE = [
    Unavailable("rapl", "permission denied: RAPL needs root since kernel 5.10"),
    Unavailable("jetson", "no device: no INA3221 rails under /sys/bus/i2c/devices"),
]


class FrozenMeter:
    """The sampler's read side with fixed values; begin/end give no windows (no watts billed)."""

    unavailable = UNAVAILABLE

    def channels(self) -> list[Channel]:
        return list(CHANNELS)

    def latest(self) -> dict[str, Sample]:
        out = {cid: Sample(cid, 1.0, w[-1], None, dict(EXTRA.get(cid, {}))) for cid, w in WATTS.items()}
        out["host"] = Sample("host", 1.0, None, None, dict(EXTRA["host"]))
        return out

    def history(self, channel_id: str, seconds: float) -> list[Sample]:
        return [Sample(channel_id, float(i), w) for i, w in enumerate(WATTS.get(channel_id, []))]

    def errors(self) -> dict[str, str]:
        return {}

    def power_sources_info(self) -> list[dict[str, Any]]:
        return [{"id": c.id, "kind": c.kind, "label": c.label, "scope": c.scope} for c in CHANNELS if c.has_watts]

    def begin(self, phase: str) -> None:
        pass

    def end(self, phase: str) -> list:
        return []

    def lap(self, phase: str) -> list:
        return []

    def stop(self) -> None:
        pass


def frozen_meter_factory():
    return FrozenMeter(), list(UNAVAILABLE), None


def no_meter_factory():
    return None, [Unavailable("nvml", "driver missing: libnvidia-ml.so not found")], None


@pytest.fixture
def cpu_doc() -> dict[str, Any]:
    """A real results document: tiny F16/Q8_0/Q4_K_M on llama-server (CPU), quick settings."""
    return copy.deepcopy(json.loads((DATA / "demo-cpu-results.json").read_text()))


def fast_settings() -> BenchSettings:
    s = BenchSettings.quick()
    s.idle_s, s.output_tokens, s.decode_prompt_tokens, s.prefill_tokens, s.ttft_tokens = 0.0, 16, 16, [64], 128
    s.repeats, s.warmup, s.timeout_s = 2, 0, 20.0
    return s


async def wait_for(pilot, cond, timeout_s: float = 20.0, step_s: float = 0.1) -> bool:
    """Let the app run until `cond()` holds (True) or the timeout passes (False)."""
    import time

    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if cond():
            return True
        await pilot.pause(step_s)
    return cond()
