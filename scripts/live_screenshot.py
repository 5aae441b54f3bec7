#!/usr/bin/env python3
"""Screenshots of the LIVE TUI during a real sweep: not a replay of a results file.

The app (`PrecmonApp`, the one `precmon --sweep FILE` runs) starts the sweep itself, launches each
variant's server, measures, and samples the machine's real power sources; Textual's headless
driver stands in for the terminal so the screen can be saved while it happens
(`App.save_screenshot`, SVG). Two moments are kept: mid-sweep (the second variant measuring, the
first one's column filled) and finished.

    python3 scripts/live_screenshot.py SWEEP.toml --out DIR [--size 120x40]

The results of the sweep land in DIR/results/ as any sweep's do. Needs textual importable.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from precmon.tui.app import PrecmonApp  # noqa: E402
from precmon.tui.config import TuiConfig  # noqa: E402
from precmon.tui.live import PENDING, RUNNING  # noqa: E402


def say(msg: str) -> None:
    print(f"[live_screenshot {time.strftime('%H:%M:%S')}] {msg}", flush=True)


def _statuses(app: PrecmonApp) -> list[tuple[str, str, int]]:
    return [(str(v.label), str(v.status), len(v.runs)) for v in app.live.doc.variants]


async def shoot(spec: Path, out: Path, size: tuple[int, int], mid_runs: int, timeout_s: float) -> list[Path]:
    app = PrecmonApp(TuiConfig(sweep_spec=spec, out_dir=out / "results", auto_sweep=True))
    saved: list[Path] = []
    tag = f"{size[0]}x{size[1]}"
    deadline = time.monotonic() + timeout_s
    async with app.run_test(size=size) as pilot:
        mid_done = False
        while time.monotonic() < deadline:
            await pilot.pause(0.5)
            st = _statuses(app)
            done = [s for s in st if s[1] not in (RUNNING, PENDING)]
            running = [s for s in st if s[1] == RUNNING]
            if not mid_done and len(done) >= 1 and running and running[0][2] >= mid_runs:
                await pilot.pause(1.0)  # a repaint after the last landed run
                saved.append(Path(app.save_screenshot(f"live-mid-sweep-{tag}.svg", str(out))))
                say(f"mid-sweep saved: {st}")
                mid_done = True
            if st and not running and not any(s[1] == PENDING for s in st) and app.measuring is None:
                await pilot.pause(2.0)
                saved.append(Path(app.save_screenshot(f"live-finished-{tag}.svg", str(out))))
                say(f"finished saved: {st}")
                break
        else:
            saved.append(Path(app.save_screenshot(f"live-timeout-{tag}.svg", str(out))))
            say(f"timed out: {_statuses(app)}")
        # Stop a sweep still running (the timeout) the way a confirmed quit does, and give it the time
        # to stop the server it launched and save what it measured: pressing q alone would open the
        # confirm screen and leave the launched server running once this process ends.
        app.shutdown()
        stop_by = time.monotonic() + 30.0
        while app.measure_worker.busy and time.monotonic() < stop_by:
            await pilot.pause(0.2)
        await pilot.press("q")
    return saved


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("spec", type=Path)
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--size", default="120x40")
    p.add_argument("--mid-runs", type=int, default=3, help="runs of the second variant before the mid-sweep shot")
    p.add_argument("--timeout", type=float, default=540.0)
    a = p.parse_args()
    a.out.mkdir(parents=True, exist_ok=True)
    w, h = (int(x) for x in a.size.split("x"))
    for path in asyncio.run(shoot(a.spec, a.out, (w, h), a.mid_runs, a.timeout)):
        print(path)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
