"""Fixed scenes for the snapshot tests: the real CPU results document, fixed live-rate readings,
the frozen power meter; no network, no clock.

- `mid_sweep`: F16 and Q8_0 done, Q4_K_M measuring with six of its recorded runs landed and a
  minute of per-second tok/s readings (the run chart shows from 40 rows).
- `quality_doc`: the same document with quality rows (KL divergence, top-1, perplexity vs F16)
  and trust warnings on two variants, as a finished sweep with `quality = true` would have.
- `watch_passive` / `watch_no_live_source`: watch mode reading another client's traffic, and on
  a server without a live token counter (Ollama's reason).
- `h200_finished`: the real 4-variant H200 sweep of 2026-12-01 (`h200-4-variants-results.json`,
  its runs' per-sample power windows and validity details left out) replayed through the app's
  messages, started without --url: each variant's launched server followed, the last one
  stopped by the sweep, and the connection errors the worker's last tick found arriving after.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

from precmon.core.schema import ResultsDoc, from_json, run_from_json, variant_from_json
from precmon.servers.watch.live_rate import LiveRate, no_live_source
from precmon.servers.watch.snapshot import ServerSnapshot
from precmon.sweep.events import RunLanded, SweepFinished, VariantFinished, VariantStarted
from precmon.sweep.spec import parse_spec
from precmon.tui.app import PrecmonApp
from precmon.tui.config import TuiConfig
from precmon.tui.messages import (
    LiveRateRead,
    MeasureEnded,
    MetricsScraped,
    ServerProbed,
    SweepEventArrived,
    SweepPlanned,
)
from tests.tui.conftest import DATA, frozen_meter_factory

URL = "http://127.0.0.1:8080"
TOK_PATTERN = [0.0, 0.0, 310.0, 380.0, 381.0, 379.0, 120.0, 0.0]  # idle, a request, idle again


def demo_doc() -> dict[str, Any]:
    return json.loads((DATA / "demo-cpu-results.json").read_text())


def readings(n: int = 60, source: str = "llama.cpp /slots + /metrics") -> list[LiveRate]:
    return [LiveRate(TOK_PATTERN[i % 8], source, 1.0, 1, taken_s=1000.0 + i) for i in range(n)]


def quality_doc() -> dict[str, Any]:
    doc = copy.deepcopy(demo_doc())
    quality = {
        "F16": (0.0, 0.0, 1.0, 10.02),
        "Q8_0": (0.00091, 0.0102, 0.992, 10.03),
        "Q4_K_M": (0.0123, 0.0931, 0.875, 10.51),
    }
    warnings = {
        "Q8_0": [
            "host-busy: other processes used 0.77 cores on average during the decode runs",
            "noisy: decode_tok_s varies 35% run to run (cv over 3 runs; take more repeats)",
        ],
        "Q4_K_M": ["gpu-throttle: nvml:0 NVIDIA GB10: power cap in 40% of samples"],
    }
    for v in doc["variants"]:
        kld, p99, top1, ppl = quality[v["label"]]
        v["metrics"] |= {
            "quality_kld_mean": kld,
            "quality_kld_p99": p99,
            "quality_top1_agree": top1,
            "quality_ppl": ppl,
        }
        v["quality"] = {"baseline": "F16", "positions": 512, "top_k": 20}
        v["warnings"] = warnings.get(v["label"], [])
    return doc


def main_app(doc: dict[str, Any] | None = None, watch: bool = False) -> PrecmonApp:
    return PrecmonApp(
        TuiConfig(url=URL, poll_server=False, watch=watch),
        initial_results=from_json(ResultsDoc, doc) if doc is not None else None,
        meter_factory=frozen_meter_factory,
    )


async def server_facts(pilot, precision: str = "Q4_K_M") -> None:
    pilot.app.show_server(True, kind="llamacpp", version="b1-fixed", model=f"tiny-{precision}", precision=precision)
    await pilot.pause(0.3)


def mid_sweep_app() -> PrecmonApp:
    doc = demo_doc()
    doc["variants"] = doc["variants"][:-1]
    return main_app(doc)


async def repainted(pilot) -> None:
    """Wait for the app's next chart repaint (once a refresh: `precmon.tui.pace`) and a little more."""
    await pilot.pause(pilot.app.pace.paint_s + 0.3)


async def mid_sweep(pilot) -> None:
    app, last = pilot.app, demo_doc()["variants"][-1]
    await server_facts(pilot)
    app.post_message(SweepEventArrived(VariantStarted(last["label"], 2, 3, "sequential"), "sweep"))
    for r in last["runs"][:6]:
        app.post_message(SweepEventArrived(RunLanded(last["label"], run_from_json(r)), "sweep"))
    await pilot.pause(0.3)  # the variant has started (it clears the chart) before the readings
    for rate in readings():
        app.trace.add_rate(rate)
    await repainted(pilot)


async def watch_passive(pilot) -> None:
    await server_facts(pilot)
    rates = readings()
    for rate in rates:
        pilot.app.trace.add_rate(rate)
    pilot.app.post_message(LiveRateRead(rates[-5], 0.0312))
    await repainted(pilot)


async def watch_no_live_source(pilot) -> None:
    await server_facts(pilot)
    rate = no_live_source("ollama")
    pilot.app.trace.add_rate(rate)
    pilot.app.post_message(LiveRateRead(rate, None))
    await repainted(pilot)


H200_PORT = 18200  # + the variant's index: each launched server listens on its own port
H200_MODEL_PATH = "?model=%2Ftmp%2Fpm%2Fwork%2Fmodels%2F8b-Q4_K_M.gguf"


def h200_doc() -> dict[str, Any]:
    return json.loads((DATA / "h200-4-variants-results.json").read_text())


def h200_spec_text() -> str:
    """The sweep that measured `h200_doc`: one launched llama-server per variant."""
    out = (  # its [defaults]: the table's rows come from these settings
        "[defaults]\noutput_tokens = 256\ndecode_prompt_tokens = 128\nprefill_tokens = [512, 4096]\n"
        "ttft_tokens = 4096\ndepth = [0, 8192, 24576]\nconcurrency = [1, 4, 16]\nquality = true\n"
        'baseline = "F16"\nrepeats = 3\nwarmup = 1\nidle_s = 5\ncooldown_s = 15\n'
    )
    for i, v in enumerate(h200_doc()["variants"]):
        port = H200_PORT + i
        out += (
            f'[[variant]]\nlabel = "{v["label"]}"\nprecision = "{v["precision"]}"\n'
            f'launch = ["llama-server", "-m", "8b.gguf", "--port", "{port}"]\nurl = "http://127.0.0.1:{port}"\n'
        )
    return out


def h200_app() -> PrecmonApp:
    return PrecmonApp(TuiConfig(poll_server=False), meter_factory=frozen_meter_factory)


async def h200_finished(pilot) -> None:
    app, variants = pilot.app, h200_doc()["variants"]
    out = Path("out/results.json")
    app.post_message(SweepPlanned(parse_spec(h200_spec_text()), out.parent))
    for i, v in enumerate(variants):
        app.post_message(SweepEventArrived(VariantStarted(v["label"], i, len(variants), "sequential"), "sweep"))
        await pilot.pause(0.1)
        url = f"http://127.0.0.1:{H200_PORT + i}"  # probed healthy once its launched server is up
        quant = v["model_info"]["quantization"]
        app.post_message(ServerProbed(ServerSnapshot(url, True, "llamacpp", "b0-0c1e570", v["model"], quant)))
        for r in v["runs"][-6:]:
            app.post_message(SweepEventArrived(RunLanded(v["label"], run_from_json(r)), "sweep"))
        app.post_message(SweepEventArrived(VariantFinished(variant_from_json(v), out), "sweep"))
    app.post_message(SweepEventArrived(SweepFinished(out, False), "sweep"))
    app.post_message(MeasureEnded("sweep", results_path=out))
    await pilot.pause(0.2)
    # what the worker's last tick read off the stopped server, landing after the sweep stopped it
    url = f"http://127.0.0.1:{H200_PORT + len(variants) - 1}"
    refused = "connection refused or host unreachable (is the server running?)"
    slots = f"cannot connect to {url}/slots{H200_MODEL_PATH}&autoload=false: {refused}"
    app.post_message(LiveRateRead(LiveRate(None, "llama.cpp /slots", error=slots)))
    app.post_message(MetricsScraped(None, f"cannot connect to {url}/metrics{H200_MODEL_PATH}: {refused}"))
    app.post_message(ServerProbed(ServerSnapshot(url, False, error=f"cannot connect to {url}/health: {refused}")))
    await pilot.pause(0.6)
