"""The TUI asks before it measures an unfit box (docs/design.md §4 "Preflight"): a DGX Spark
capped at 30 W of PL1's 140 W shows the findings in a dialog before the sweep starts; "measure
anyway" sweeps and keeps `power-capped:` in every variant and in `host.preflight`, "quit" measures
nothing and exits 2; an uncapped box sweeps without asking."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from precmon.power import box
from precmon.tui.app import PrecmonApp
from precmon.tui.config import TuiConfig
from precmon.tui.screens.preflight import PreflightDialog
from tests.fakes.nvml import NoDriver
from tests.fakes.timed_server import Behaviour, TimedServer
from tests.power.spark_tree import write_spbm
from tests.tui.conftest import no_meter_factory, wait_for

SWEEP = (
    "[defaults]\ncooldown_s = 0\nidle_s = 0\nwarmup = 0\nrepeats = 2\noutput_tokens = 16\n"
    "decode_prompt_tokens = 16\nprefill_tokens = [32]\nttft_tokens = 32\n"
    '[[variant]]\nlabel = "one"\nprecision = "int4"\nurl = "{url}"\n'
)


@pytest.fixture
def spark(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "root"
    (root / "proc").mkdir(parents=True)
    monkeypatch.setenv("PRECMON_SYSFS_ROOT", str(root))
    monkeypatch.setenv("PRECMON_PROC_ROOT", str(root / "proc"))
    monkeypatch.setattr(box, "load_nvml", NoDriver)
    return root


def _sweep(tmp_path: Path, answer: str | None) -> tuple[int | None, list[str], bool]:
    """Start the TUI's sweep; `answer` is the key pressed at the dialog (None: none expected).
    Returns the app's return code, the dialog's findings and whether results were written."""
    out, seen = tmp_path / "out", []

    async def scenario() -> int | None:
        with TimedServer(Behaviour(itl_s=0.002)) as srv:
            spec = tmp_path / "sweep.toml"
            spec.write_text(SWEEP.format(url=srv.url))
            config = TuiConfig(sweep_spec=str(spec), out_dir=out, auto_sweep=True, poll_server=False)
            app = PrecmonApp(config, meter_factory=no_meter_factory)
            async with app.run_test(size=(120, 40)) as pilot:
                if answer is not None:
                    assert await wait_for(pilot, lambda: isinstance(app.screen, PreflightDialog), 20)
                    assert not (out / "results.json").exists()  # nothing measured while it asks
                    seen.extend(app.screen.findings)
                    await pilot.press(answer)
                if answer != "q":
                    assert await wait_for(pilot, lambda: (out / "results.json").exists(), 60)
                    assert await wait_for(pilot, lambda: app.measuring is None, 30)
                    app.exit(0)
                else:
                    await wait_for(pilot, lambda: not app.is_running, 10)
            assert answer != "q" or app.exit_lines()[0] == "precmon: not measured: the preflight found"
            return app.return_value

    code = asyncio.run(scenario())
    return code, seen, (out / "results.json").exists()


def test_a_capped_spark_asks_first_and_measuring_anyway_keeps_the_finding(spark, tmp_path):
    write_spbm(spark, caps_w={"pl1": 30.0})
    code, findings, written = _sweep(tmp_path, "c")
    assert code == 0 and written
    assert findings[0].startswith("power-capped: spbm hwmon3 pl1 capped at 30 W, below its EC default 140 W")
    doc = json.loads((tmp_path / "out" / "results.json").read_text())
    assert doc["host"]["preflight"]["findings"] == findings
    [variant] = doc["variants"]
    assert [w for w in variant["warnings"] if w.startswith(("power-capped:", "safe-mode:"))] == findings


def test_quit_at_the_dialog_measures_nothing_and_exits_2(spark, tmp_path):
    write_spbm(spark, caps_w={"pl1": 30.0})
    code, findings, written = _sweep(tmp_path, "q")
    assert code == 2 and findings and not written


def test_an_uncapped_spark_sweeps_without_asking(spark, tmp_path):
    write_spbm(spark)
    code, _, written = _sweep(tmp_path, None)
    assert code == 0 and written
    doc = json.loads((tmp_path / "out" / "results.json").read_text())
    assert doc["host"]["preflight"]["findings"] == []
    assert not any(w.startswith("power-capped:") for w in doc["variants"][0].get("warnings") or [])
