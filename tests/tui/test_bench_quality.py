"""The TUI's `b` is `precmon bench` (sweep/execute.py run_variant): with quality on in the sweep
file the TUI was started with, it scores quality after the plan (it never did), and it names the
variant by the one label rule (a model asked for names it, as `bench --model` does). Pilot
against `TimedServer` (loopback; llama.cpp-like, model "fake-Q4_K_M"; no /completion, so its
quality cells are n/a with the reason, which is what shows that scoring ran)."""

from __future__ import annotations

import asyncio
import json

from precmon.tui.app import PrecmonApp
from precmon.tui.config import TuiConfig
from tests.fakes.timed_server import Behaviour, TimedServer
from tests.tui.conftest import fast_settings, no_meter_factory, wait_for

SIZE = (120, 40)


def _bench(tmp_path, quality: bool, model: str | None = None) -> dict:
    spec = tmp_path / "sweep.toml"

    async def scenario() -> None:
        with TimedServer(Behaviour(itl_s=0.001, prefill_s_per_token=0.0001)) as srv:
            spec.write_text(
                f'[defaults]\nurl = "{srv.url}"\nquality = {"true" if quality else "false"}\nquality_positions = 4\n'
                '\n[[variant]]\nlabel = "Q4_K_M"\nprecision = "int4"\nmodel = "fake-Q4_K_M"\n'
            )
            app = PrecmonApp(
                TuiConfig(
                    url=srv.url,
                    model=model,
                    sweep_spec=str(spec),
                    settings=fast_settings(),
                    out_dir=tmp_path,
                    poll_server=False,
                ),
                meter_factory=no_meter_factory,
            )
            async with app.run_test(size=SIZE) as pilot:
                await pilot.press("b")
                assert await wait_for(pilot, lambda: any(tmp_path.glob("bench-*/results.json")), 30)
                assert await wait_for(pilot, lambda: app.measuring is None, 10)

    asyncio.run(scenario())
    [saved] = tmp_path.glob("bench-*/results.json")
    [variant] = json.loads(saved.read_text())["variants"]
    return variant


def test_b_scores_quality_when_the_sweep_file_turns_it_on(tmp_path):
    variant = _bench(tmp_path, quality=True)
    assert variant["quality"]["reason"].startswith("a quality request failed"), variant["quality"]
    assert "quality_kld_mean" in variant["metrics"] and variant["metrics"]["quality_kld_mean"] is None
    assert variant["label"] == "Q4_K_M" and variant["status"] == "ok"  # the speed plan is untouched


def test_b_without_quality_scores_none_and_a_model_asked_for_names_the_column(tmp_path):
    variant = _bench(tmp_path, quality=False, model="fake-Q4_K_M")
    assert "quality" not in variant and "quality_kld_mean" not in variant["metrics"]
    assert variant["label"] == "fake-Q4_K_M"  # the TUI used to call it by the quantization, Q4_K_M
