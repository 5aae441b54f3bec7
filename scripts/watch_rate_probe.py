"""Measure watch mode's live tok/s against the truth, quiet and beside CPU burners.

Starts a real llama-server (the tiny synthetic model, one thread), N CPU burners (`--burners`),
another process streaming one long answer (`tests/integration/stream_client.py`, which logs each
token's `time.monotonic()`), and the real TUI in watch mode (headless, the real server worker).
It records every live reading the worker made (with the GET's send and receive times) and what
the big number showed, and prints each one against the stream's own tokens over the same interval.

    PYTHONPATH=src python scripts/watch_rate_probe.py --burners 3 --tokens 1500

Why a script: the cause of a wrong live rate under load is a timing question, and only a run on
a loaded machine answers it; the integration test `test_live_rate_busy_llamacpp.py` asserts the
outcome, this prints the numbers behind it (docs/benchmarks.md).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

BURN = "import time\nwhile True:\n    pass\n"
FIGURES: list[tuple[float, float, float, str | None]] = []  # the readout's (end, tok/s, span, unsure)


def server_clock(rows: list[dict]) -> list[tuple[float, int]]:
    """(monotonic time, tokens) on the server's own clock: each event's `predicted_ms` put on
    the client's clock through the least-delayed event (a starved client reads events late)."""
    timed = [r for r in rows if isinstance(r.get("ms"), (int, float)) and isinstance(r.get("pn"), int)]
    if not timed:
        return [(r["t"], r["n"]) for r in rows if "t" in r and isinstance(r.get("n"), int)]
    start = min(r["t"] - r["ms"] / 1000 for r in timed)
    return [(start + r["ms"] / 1000, r["pn"]) for r in timed]


def truth_between(events: list[tuple[float, int]], a_s: float, b_s: float) -> float | None:
    """Tokens per second the server made between two instants (None outside the request)."""
    if not events or a_s < events[0][0] or b_s > events[-1][0] or b_s <= a_s:
        return None

    def at(t: float) -> float:  # linear between events: a token's time is known to its event
        for (t0, n0), (t1, n1) in zip(events, events[1:], strict=False):
            if t0 <= t <= t1:
                return n0 + (n1 - n0) * ((t - t0) / (t1 - t0) if t1 > t0 else 1.0)
        return events[-1][1]

    return (at(b_s) - at(a_s)) / (b_s - a_s)


async def watch(url: str, out: Path, tokens: int, log: list[dict]) -> tuple[list, list]:
    from precmon.servers.watch import live_rate
    from precmon.tui.app import PrecmonApp
    from precmon.tui.config import TuiConfig
    from precmon.tui.widgets.readout import Readout
    from precmon.tui.widgets.server_panel import ServerPanel
    from precmon.tui.widgets.watch_view import WatchView
    from tests.tui.conftest import no_meter_factory, wait_for

    real_read = live_rate.SlotsPoller.read

    def read(self: live_rate.SlotsPoller, finished_total: float | None = None) -> live_rate.SlotRead:
        sent = time.monotonic()
        r = real_read(self, finished_total)
        log.append({"sent": sent, "recv": r.taken_s, "n": sum(n for _, n in r.processing.values())})
        return r

    live_rate.SlotsPoller.read = read  # type: ignore[method-assign]
    app = PrecmonApp(TuiConfig(url=url, watch=True), meter_factory=no_meter_factory)
    rates: list = []
    shown: list[tuple[float, str, str]] = []
    figures = FIGURES
    async with app.run_test(size=(120, 40)) as pilot:
        readout = app.query_one("#ro-tok", Readout)
        panel = app.query_one(ServerPanel)
        await wait_for(pilot, lambda: panel.view.live is not None, 30)
        argv = [sys.executable, "-m", "tests.integration.stream_client", url, str(tokens), str(out)]
        stream = subprocess.Popen(argv, cwd=ROOT)
        while stream.poll() is None:
            await pilot.pause(0.2)
            rate = panel.view.live
            if rate is not None and all(rate is not r for r in rates):
                rates.append(rate)
            shown.append((time.monotonic(), readout.value, readout.source))
            view = app.query_one(WatchView)
            w, last = view.shown, view.window.last_s
            if w is not None and w.tok_s is not None and last is not None:
                figures.append((last, w.tok_s, w.span_s, w.unsure))
        app.exit(0)
    live_rate.SlotsPoller.read = real_read  # type: ignore[method-assign]
    return rates, shown


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--burners", type=int, default=0)
    ap.add_argument("--tokens", type=int, default=1500)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--real", action="store_true", help="SmolLM2-135M Q4_1 instead of the tiny model")
    ap.add_argument("--json", type=Path, help="write the raw readings here")
    args = ap.parse_args()
    from precmon.testbed.llama_build import build_for
    from precmon.testbed.models import make_models
    from precmon.testbed.server import start_llama_server

    build = build_for("cpu")
    model = make_models("tiny", build=build)["Q4_K_M"]
    if args.real:
        from precmon.testbed.real_model import release_path

        model = release_path()
    tmp = Path(tempfile.mkdtemp(prefix="watch-rate-"))
    server = start_llama_server(
        build.tool("llama-server"),
        tmp / "server.log",
        model=model,
        ctx_tokens=4096,
        threads=args.threads,
        metrics=False,
    )
    burners = [subprocess.Popen([sys.executable, "-c", BURN]) for _ in range(args.burners)]
    log: list[dict] = []
    try:
        rates, shown = asyncio.run(watch(server.url, tmp / "stream.jsonl", args.tokens, log))
    finally:
        for b in burners:
            b.kill()
        server.stop()
    lines = [json.loads(x) for x in (tmp / "stream.jsonl").read_text().splitlines() if x.strip()]
    events = server_clock(lines)
    timings = lines[-1].get("timings") or {}
    print(f"burners {args.burners}; server's own rate {timings.get('predicted_per_second'):.1f} tok/s")
    print(" taken   interval  read tok/s  truth tok/s  err%   rtt_ms  flagged")
    errs = []
    for r in rates:
        if r.tok_s is None or r.taken_s is None or r.interval_s is None:
            continue
        t = truth_between(events, r.taken_s - r.interval_s, r.taken_s)
        if t is None or t <= 0:
            continue
        err = 100 * (r.tok_s - t) / t
        rtt = next((1000 * (g["recv"] - g["sent"]) for g in log if abs(g["recv"] - r.taken_s) < 1e-6), float("nan"))
        unsure = getattr(r, "unsure", None)
        errs.append((abs(err), bool(unsure)))
        print(
            f"{r.taken_s - events[0][0]:6.1f} {r.interval_s:8.2f} {r.tok_s:10.1f} {t:11.1f} {err:+6.0f} "
            f"{rtt:8.0f}  {unsure or ''}"
        )
    from precmon.report.fmt import format_value

    lags = []  # how old the reading the big number shows is, when it is looked at
    for t, value, _ in shown:
        match = [r.taken_s for r in rates if r.taken_s and r.tok_s is not None and format_value(r.tok_s) == value]
        if match and value not in ("--", "0"):
            lags.append(t - max(m for m in match if m <= t) if any(m <= t for m in match) else 0.0)
    if lags:
        lags.sort()
        print(f"age of the shown reading: median {lags[len(lags) // 2]:.2f} s, max {lags[-1]:.2f} s")
    bad = [e for e, flagged in errs if e > 35 and not flagged]
    worst = max((e for e, _ in errs), default=0)
    print(f"one-second readings {len(errs)}; off by >35%: {len(bad)}; max |err| {worst:.0f}%")
    mean = timings.get("predicted_per_second") or 0
    seen = sorted(set(FIGURES))
    off = [f for f in seen if (t := truth_between(events, f[0] - f[2], f[0])) and abs(f[1] - t) > 0.35 * t]
    off_mean = [f for f in seen if mean and abs(f[1] - mean) > 0.35 * mean]
    print(
        f"readout figures {len(seen)}; marked unsure {sum(1 for f in seen if f[3])}; "
        f"off by >35% vs the same window {len(off)} (unmarked {sum(1 for f in off if not f[3])}); "
        f"vs the request's mean {len(off_mean)} (unmarked {sum(1 for f in off_mean if not f[3])})"
    )
    shown_vals = [v for _, v, _ in shown if v not in ("--",)]
    print(f"shown values: {sorted(set(shown_vals))[:20]}")
    if args.json:
        args.json.write_text(json.dumps({"log": log, "events": events, "timings": timings, "shown": shown}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
