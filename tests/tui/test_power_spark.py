"""The Power panel on a DGX Spark fixture (spbm 0.3.0 tree + GB10 NVML): the draw channels and
the GB10 row with only the fields GB10 has (no power limit, no n/a), the status row saying
PROCHOT and the cap reached, no PL-controller or budget rows, and a register the firmware leaves
inactive folded into one line instead of an n/a row."""

from __future__ import annotations

import asyncio

import pytest

from precmon.power.nvml import open_nvml
from precmon.power.sampler import PowerSampler
from precmon.power.spark import open_spbm
from precmon.tui.app import PrecmonApp
from precmon.tui.config import TuiConfig
from precmon.tui.widgets.power_panel import PowerPanel
from tests.power.spark_tree import gb10_nvml, power_path, write_spbm
from tests.tui.conftest import wait_for
from tests.tui.test_power_layout import _panel_text


@pytest.mark.parametrize("size", [(120, 40), (80, 24)], ids=lambda s: f"{s[0]}x{s[1]}")
def test_spark_rows_hide_what_the_device_never_has(tmp_path, size):
    d = write_spbm(tmp_path, prochot=1, watts={"syspl1": 59.8}, caps_w={"syspl1": 60.0}, budgets=True)
    power_path(d, "dla").write_text(f"{0xFFFFFFFF * 1000}\n")  # telemetry inactive: no reading

    def factory():
        spbm = open_spbm(d)
        nvml, missing = open_nvml(gb10_nvml())
        assert spbm is not None and nvml is not None
        return PowerSampler([nvml, spbm], rate_hz=20.0, extras_hz=10.0).start(), missing, None

    async def scenario() -> str:
        app = PrecmonApp(TuiConfig(poll_server=False), meter_factory=factory)
        async with app.run_test(size=size) as pilot:
            panel = app.query_one(PowerPanel)

            def ready() -> bool:
                rows = {r.channel_id: r for r in panel.snapshot.rows} if panel.snapshot else {}
                status = rows.get("hwmon3:status")
                return status is not None and "temp_c" in status.extra and rows["nvml:0"].watts is not None

            assert await wait_for(pilot, ready, 10)
            text = _panel_text(panel)
            app.exit(0)
        return text

    text = asyncio.run(scenario())
    lines = text.splitlines()
    assert any("sys_total" in x and "25.0 W" in x for x in lines), text
    assert any("NVIDIA GB10" in x and "11.2 W" in x for x in lines), text
    assert "n/a" not in text and "N/A" not in text, text
    assert not any(x.startswith(("pl1", "pl2", "syspl", "budget")) for x in lines), text
    at = next(i for i, x in enumerate(lines) if "spbm status" in x)
    status = " ".join(lines[at : at + 2])  # the row, and its fields on a line of their own when long
    assert "PROCHOT ON" in status and "PL level 1" in status and "at syspl1 cap 60 W" in status, text
    assert "…" not in status, text
    (silent,) = [x for x in lines if x.startswith("no reading yet: ")]
    assert "dla" in silent and "sys_total" not in silent, text
