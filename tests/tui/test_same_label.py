"""#13: a column is one measurement, not one label. A good bench of Q4_K_M followed by a sweep
variant also labelled Q4_K_M that fails keeps both columns, and `e` exports both."""

from __future__ import annotations

import asyncio
import json
import socket
from pathlib import Path

from precmon.core.schema import Run, VariantResult, to_json
from precmon.sweep.events import RunLanded, VariantFinished, VariantStarted
from precmon.tui.app import PrecmonApp
from precmon.tui.config import TuiConfig
from precmon.tui.live import LiveResults
from tests.fakes.timed_server import Behaviour, TimedServer
from tests.tui.conftest import fast_settings, no_meter_factory, wait_for


def test_live_results_keep_two_measurements_with_one_label():
    live = LiveResults()
    live.apply(VariantStarted("Q4_K_M", 0, 1, "bench"))
    live.apply(RunLanded("Q4_K_M", Run("decode", 16, 16, decode_tok_s=300.0)))
    live.apply(VariantFinished(VariantResult("Q4_K_M", "int4", "m", {}, metrics={"decode_tok_s": 300.0}), Path()))
    live.apply(VariantStarted("Q4_K_M", 0, 1, "model"))
    live.apply(RunLanded("Q4_K_M", Run("decode", 16, 16, ok=False, reason="stopped")))
    stopped = VariantResult("Q4_K_M", "int4", "m", {}, status="failed", errors=["stopped by user"])
    live.apply(VariantFinished(stopped, Path()))
    assert [(v["label"], v["status"]) for v in to_json(live.doc)["variants"]] == [
        ("Q4_K_M", "ok"),
        ("Q4_K_M", "failed"),
    ]
    assert to_json(live.doc)["variants"][0]["metrics"]["decode_tok_s"] == 300.0
    assert len(to_json(live.exportable())["variants"]) == 2


def test_a_failed_sweep_variant_does_not_replace_a_good_bench_of_the_same_label(tmp_path):
    # bound, never listening: connections to it are refused, and no other test's server can take
    # the port meanwhile (a closed one was taken by another xdist worker's fake server once: the
    # "dead" variant measured ok)
    dead = socket.socket()
    dead.bind(("127.0.0.1", 0))
    dead_url = f"http://127.0.0.1:{dead.getsockname()[1]}"
    spec = tmp_path / "sweep.toml"
    spec.write_text(f'[[variant]]\nlabel = "Q4_K_M"\nprecision = "int4"\nurl = "{dead_url}"\n')

    async def scenario():
        with TimedServer(Behaviour(itl_s=0.001, prefill_s_per_token=0.0001)) as srv:
            app = PrecmonApp(
                TuiConfig(
                    url=srv.url,
                    sweep_spec=str(spec),
                    settings=fast_settings(),
                    out_dir=tmp_path / "out",
                    poll_server=False,
                ),
                meter_factory=no_meter_factory,
            )
            async with app.run_test(size=(120, 40)) as pilot:
                await pilot.press("b")
                assert await wait_for(pilot, lambda: app.measuring is None, 30)
                await pilot.press("s")
                await pilot.pause(0.2)
                assert await wait_for(pilot, lambda: app.measuring is None, 30)
                await pilot.pause(0.3)
                status = [(v["label"], v["status"]) for v in to_json(app.live.doc)["variants"]]
                assert status == [("Q4_K_M", "ok"), ("Q4_K_M", "failed")]
                await pilot.press("e")
                report = tmp_path / "out" / "report.json"
                assert await wait_for(pilot, report.exists, 10)
                await pilot.pause(0.3)
                exported = json.loads(report.read_text())["variants"]
                assert [(v["label"], v["status"]) for v in exported] == status
                assert exported[0]["metrics"]["decode_tok_s"] > 100

    try:
        asyncio.run(scenario())
    finally:
        dead.close()
