"""The Power panel at 120 and 80 columns with a GPU (the NVML fake the power tests use): watts,
util, SM clock in MHz, temperature and memory are all on screen, and the sources without
watts fold into one line. At 120 columns the row read `NVIDIA H200 gpu 475.8 W ▁▁▇██ util 92% ·
1980…`: clock units, temperature and memory were cut."""

from __future__ import annotations

import asyncio
import re

import pytest
from rich.console import Console

from precmon.power.base import Unavailable
from precmon.power.host import open_host
from precmon.power.nvml import open_nvml
from precmon.power.sampler import PowerSampler
from precmon.tui.app import PrecmonApp
from precmon.tui.config import TuiConfig
from precmon.tui.widgets.power_panel import PowerPanel
from tests.power.test_nvml import FakeNvml
from tests.tui.conftest import wait_for

ABSENT = [
    Unavailable("rapl", "permission denied: RAPL needs root since kernel 5.10"),
    Unavailable("hwmon", "no device: /sys/class/hwmon absent"),
    Unavailable("jetson", "no device: no INA3221 rails under /sys/bus/i2c/devices"),
]


def _nvml_meter_factory():
    """The H200 fake and this machine's host CPU + memory row (its long label widens the first column)."""
    source, missing = open_nvml(FakeNvml())
    host, host_missing = open_host()
    assert source is not None and host is not None
    sampler = PowerSampler([source, host], rate_hz=20.0, extras_hz=10.0).start()
    return sampler, [*ABSENT, *missing, *host_missing], None


def _panel_text(panel: PowerPanel) -> str:
    with open("/dev/null", "w") as sink:
        console = Console(width=panel.content_size.width, record=True, file=sink, color_system=None)
        console.print(panel.render_snapshot(panel.snapshot))
    return console.export_text()


@pytest.mark.parametrize("size", [(120, 40), (80, 24)], ids=lambda s: f"{s[0]}x{s[1]}")
def test_gpu_row_shows_everything_and_absences_fold(size):
    async def scenario() -> str:
        app = PrecmonApp(TuiConfig(poll_server=False), meter_factory=_nvml_meter_factory)
        async with app.run_test(size=size) as pilot:
            panel = app.query_one(PowerPanel)

            def ready() -> bool:
                snap = panel.snapshot
                rows = [r for r in snap.rows if r.kind == "nvml"] if snap else []
                return bool(rows) and rows[0].watts is not None and "temp_c" in rows[0].extra

            assert await wait_for(pilot, ready, 10)
            text = _panel_text(panel)
            app.exit(0)
        return text

    text = asyncio.run(scenario())
    # the GPU's row and its continuation line ("util 97% · ..."), not the host row ("CPU utilization")
    gpu = [line for line in text.splitlines() if "NVIDIA H200" in line or re.match(r"\s*util \d", line)]
    joined = "\n".join(gpu)
    for part in (" W ", "util 97%", "1980 MHz", "61°C", "mem 42.9/151.4 GB"):
        assert part in joined, (part, text)
    assert "…" not in joined, text
    absent = [line for line in text.splitlines() if "rapl" in line or "jetson" in line or "hwmon" in line]
    assert absent == ["no other power sources (rapl, hwmon, jetson) — see `precmon doctor`"], text
