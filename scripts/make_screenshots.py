"""Write the README screenshots: the real app, driven by Pilot, fed a REAL results file.

    python scripts/make_screenshots.py [RESULTS.json] [--out screenshots/]

Default input: docs/results/demo-cpu/results.json if it exists, else tests/tui/data/
demo-cpu-results.json (tiny F16/Q8_0/Q4_K_M on a CPU llama-server, quick settings). Nothing is
invented: the mid-sweep view replays the last variant's recorded runs through the app's own
message path, the watch view replays its recorded decode runs, and the Power panel shows this
machine's real sources (and why the missing ones are missing).

Every picture's title bar says "REPLAY of <file>": none of it is live (scripts/live_screenshot.py
takes the live ones). Each of main-mid-sweep, main-finished, watch, help and answers is saved at 120×40 and 80×24 as SVG
(`App.save_screenshot`) and PNG. PNGs come from `rsvg-convert` (librsvg2-bin): Textual writes
spaces as &#160;, which librsvg draws narrower than a cell, so they are turned back into spaces
under xml:space="preserve" first.
"""

from __future__ import annotations

import argparse
import asyncio
import copy
import json
import platform
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from precmon.core.schema import ResultsDoc, Run, from_json, run_from_json
from precmon.servers.watch.live_rate import SLOTS_SOURCE, LiveRate
from precmon.sweep.events import Progress, RunLanded, VariantStarted
from precmon.tui.app import PrecmonApp
from precmon.tui.config import TuiConfig
from precmon.tui.messages import DriveStopped, LiveRateRead
from precmon.tui.workers.power_worker import MeterFactory, default_meter_factory
from precmon.tui.workers.server_worker import NO_TOKENS

ROOT = Path(__file__).resolve().parents[1]
DEFAULTS = [ROOT / "docs/results/demo-cpu/results.json", ROOT / "tests/tui/data/demo-cpu-results.json"]
SIZES = [(120, 40), (80, 24)]


def _server_facts(app: PrecmonApp, variant: dict) -> None:
    srv = variant.get("server") or {}
    app.show_server(
        True,
        kind=srv.get("kind"),
        version=srv.get("version"),
        model=variant.get("model"),
        precision=variant.get("label"),
    )


def _runs(variant: dict) -> list[Run]:
    return [run_from_json(r) for r in variant.get("runs") or []]


async def shoot(doc: dict, scene: str, size: tuple[int, int], out: Path, replay_of: str = "a results file") -> Path:
    variants = doc["variants"]
    initial = copy.deepcopy(doc)
    if scene == "main-mid-sweep":
        initial["variants"] = variants[:-1]
    url = (variants[-1].get("server") or {}).get("url")
    meter_factory: MeterFactory = default_meter_factory
    host = doc.get("host") or {}
    here = (socket.gethostname(), platform.platform())
    if (host.get("hostname"), host.get("platform")) != here and host.get("power_sources"):
        # Rendered away from the machine that measured: show where the table's watts came from
        # rather than this machine's own (unrelated) power sources.
        srcs = ", ".join(f"{p['id']} {p.get('label', '')} ({p['scope']})" for p in host["power_sources"])
        gpus = ", ".join(g["name"] for g in host.get("gpus") or []) or host.get("hostname", "?")
        note = f"measured on {gpus}: power from {srcs}; live power is not shown in this screenshot"

        def measured_elsewhere() -> tuple[None, list[Any], str]:
            return None, [], note

        meter_factory = measured_elsewhere
    app = PrecmonApp(
        TuiConfig(url=url, poll_server=False, watch=scene.startswith("watch")),
        initial_results=from_json(ResultsDoc, initial),
        meter_factory=meter_factory,
    )
    async with app.run_test(size=size) as pilot:
        await pilot.pause(1.2)  # the power worker's first snapshots
        # every picture says it is a replay, in its title bar: none of it is live
        app.sub_title = f"REPLAY of {replay_of} (recorded {str(doc.get('created') or '?')[:16]}), not live"
        last = variants[-1]
        _server_facts(app, last)
        if scene == "main-mid-sweep":
            runs = _runs(last)
            half = runs[: max(1, len(runs) * 2 // 3)]
            progress = Progress(
                last["label"], len(half), len(runs) + 1, f"{half[-1].phase} {half[-1].target_prompt_tokens} tokens"
            )
            app.replay(
                [
                    VariantStarted(last["label"], len(variants) - 1, len(variants), "model"),
                    *(RunLanded(last["label"], r) for r in half),
                    progress,
                ],
                plan={v["label"]: (v.get("precision"), v.get("model")) for v in variants},
            )
        elif scene == "watch":  # the recorded decode runs stand in for --drive's measured requests
            app.show_drive([r for r in _runs(last) if r.phase == "decode"])
        elif scene == "watch-failing":  # --drive, then the server's answers turn to "choices": [null]
            app.show_drive([r for r in _runs(last) if r.phase == "decode"])
            await pilot.pause(0.5)
            since = time.time() - 41.0
            app.post_message(DriveStopped(NO_TOKENS, 7, 30.0, since))  # what precmon said (test)
        elif scene == "watch-busy":  # measured one-second reads beside 3 CPU burners, in the app's path
            await _busy_reads(app, pilot)
        elif scene == "main-finished":
            for r in _runs(last):
                app.show_request(r)
        elif scene == "help":
            await pilot.press("question_mark")
        elif scene == "answers":  # `a`: the recorded answers side by side, and what ran
            await pilot.press("a")
        await pilot.pause(0.8)
        name = f"{scene}-{size[0]}x{size[1]}.svg"
        app.save_screenshot(name, str(out))
    return out / name


BUSY_READS = ROOT / "docs" / "results" / "watch-busy-reads-2026-12-03.json"


async def _busy_reads(app: PrecmonApp, pilot: Any) -> None:
    """Replay the reads recorded on the busy box (`BUSY_READS`) up to a stretch where the pace
    swung, as the server worker posts them (the last one just now): the readout's window judges."""
    reads = json.loads(BUSY_READS.read_text(encoding="utf-8"))["reads"]
    t = time.monotonic() - sum(r["interval_s"] for r in reads[:33])  # (a fixed pause each below)
    for r in reads[:33]:  # up to reads 29-33: 20.1, 24.7, 45.3, 19.8, 41.0 tok/s
        t += r["interval_s"]
        rate = LiveRate(r["tokens"] / r["interval_s"], SLOTS_SOURCE, r["interval_s"], 1, taken_s=t, timing_s=r["rtt_s"])
        app.trace.add_rate(rate)
        app.post_message(LiveRateRead(rate, None))
        await pilot.pause(0.02)  # a newer read replaces one still queued: one at a time, as they came


def to_png(svg: Path) -> Path | None:
    exe = shutil.which("rsvg-convert")
    if exe is None:
        print("rsvg-convert not found (apt-get install -y librsvg2-bin): SVG only", file=sys.stderr)
        return None
    text = svg.read_text(encoding="utf-8").replace("&#160;", " ").replace("<svg ", '<svg xml:space="preserve" ', 1)
    png = svg.with_suffix(".png")
    subprocess.run([exe, "--zoom", "1.5", "-o", str(png)], input=text.encode(), check=True)
    return png


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("results", nargs="?", help="a precmon results file (a real run)")
    p.add_argument("--out", default=str(ROOT / "screenshots"))
    p.add_argument("--scene", action="append", help="only this scene (repeatable)")
    args = p.parse_args(argv)
    path = Path(args.results) if args.results else next((d for d in DEFAULTS if d.exists()), None)
    if path is None or not path.exists():
        print("no results file: pass one (e.g. from `precmon sweep` or `precmon demo`)", file=sys.stderr)
        return 2
    doc = json.loads(path.read_text(encoding="utf-8"))
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    print(f"results: {path}")
    scenes = ("main-mid-sweep", "main-finished", "watch", "help", "watch-failing", "watch-busy", "answers")
    for scene in args.scene or scenes:
        for size in SIZES:
            svg = asyncio.run(shoot(doc, scene, size, out, path.name))
            png = to_png(svg)
            print(
                f"  {svg.relative_to(out.parent) if out.parent in svg.parents else svg}"
                + (f" + {png.name}" if png else "")
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
