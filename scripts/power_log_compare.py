#!/usr/bin/env python3
"""precmon's decode watts against an independent nvidia-smi log of the same sweep, per variant.

The log is `nvidia-smi --query-gpu=timestamp,power.draw,power.draw.instant,... --format=csv -lms 100`
run beside the sweep. Each decode run in the results file carries its power window in Unix seconds
(`extra.window_unix_s`) and the prefill part cut from it (`extra.prefill_part.seconds`); the log's
samples inside first token → end are averaged over all of a variant's decode runs and set beside
precmon's `power_decode_w`. nvidia-smi stamps local time: pass --utc-offset-h when the GPU machine's
clock is not UTC. `power.draw` is averaged by the driver over about a second; `power.draw.instant` is
the instant reading (both are kept when logged).

Usage: python3 scripts/power_log_compare.py RESULTS.json NVIDIA_SMI.csv [--json OUT.json]
"""

from __future__ import annotations

import argparse
import csv
import datetime as dt
import json
import sys
from pathlib import Path

COLUMNS = {"power.draw [W]": "draw", "power.draw.instant [W]": "instant"}


def read_log(path: Path, utc_offset_h: float = 0.0) -> list[tuple[float, dict[str, float]]]:
    """(Unix seconds, {column: watts}) per line; lines with no number (e.g. `[N/A]`) are skipped."""
    rows: list[tuple[float, dict[str, float]]] = []
    with path.open(newline="") as f:
        reader = csv.reader(f, skipinitialspace=True)
        header = [h.strip() for h in next(reader, [])]
        cols = {i: COLUMNS[h] for i, h in enumerate(header) if h in COLUMNS}
        if "timestamp" not in header or not cols:
            raise SystemExit(f"{path}: line 1: expected a timestamp and a power.draw column, got {header}")
        ti = header.index("timestamp")
        for n, line in enumerate(reader, start=2):
            try:
                stamp = dt.datetime.strptime(line[ti].strip(), "%Y/%m/%d %H:%M:%S.%f")
            except (IndexError, ValueError):
                raise SystemExit(f"{path}: line {n}: unreadable timestamp") from None
            t = stamp.replace(tzinfo=dt.timezone.utc).timestamp() - utc_offset_h * 3600
            watts = {}
            for i, name in cols.items():
                try:
                    watts[name] = float(line[i].split()[0])
                except (IndexError, ValueError):
                    pass
            if watts:
                rows.append((t, watts))
    return rows


def decode_spans(variant: dict) -> list[tuple[float, float]]:
    spans = []
    for r in variant.get("runs", []):
        extra = r.get("extra") or {}
        span = extra.get("window_unix_s")
        if r.get("phase") != "decode" or not r.get("ok") or not span:
            continue
        cut = (extra.get("prefill_part") or {}).get("seconds") or 0.0
        spans.append((span[0] + cut, span[1]))
    return spans


def compare(results: dict, log: list[tuple[float, dict[str, float]]]) -> list[dict]:
    out = []
    for v in results.get("variants", []):
        spans = decode_spans(v)
        row: dict = {"label": v.get("label"), "precmon_w": (v.get("metrics") or {}).get("power_decode_w")}
        row["decode_runs"] = len(spans)
        for col in COLUMNS.values():
            inside = [w[col] for t, w in log if col in w and any(a <= t <= b for a, b in spans)]
            row[f"smi_{col}_w"] = round(sum(inside) / len(inside), 1) if inside else None
            row[f"smi_{col}_samples"] = len(inside)
            mine, theirs = row["precmon_w"], row[f"smi_{col}_w"]
            row[f"diff_{col}_pct"] = round((mine / theirs - 1) * 100, 1) if mine and theirs else None
        out.append(row)
    return out


def _cell(r: dict, col: str) -> tuple[str, str]:
    w, d = r[f"smi_{col}_w"], r[f"diff_{col}_pct"]
    shown = f"{w} ({r[f'smi_{col}_samples']})" if w is not None else "n/a"
    return shown, f"{d:+.1f}%" if d is not None else "n/a"


def markdown(rows: list[dict]) -> str:
    lines = [
        "| variant | precmon decode W | nvidia-smi power.draw.instant W (samples) | Δ | nvidia-smi power.draw W | Δ |",
        "| --- | ---: | ---: | ---: | ---: | ---: |",
    ]
    for r in rows:
        (inst, d_inst), (draw, d_draw) = _cell(r, "instant"), _cell(r, "draw")
        pw = r["precmon_w"]
        lines.append(f"| {r['label']} | {round(pw, 1) if pw else 'n/a'} | {inst} | {d_inst} | {draw} | {d_draw} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("results", type=Path)
    p.add_argument("log", type=Path)
    p.add_argument("--utc-offset-h", type=float, default=0.0)
    p.add_argument("--json", type=Path, default=None)
    a = p.parse_args(argv)
    rows = compare(json.loads(a.results.read_text()), read_log(a.log, a.utc_offset_h))
    if a.json:
        a.json.write_text(json.dumps(rows, indent=1) + "\n")
    print(markdown(rows))
    return 0 if all(r["decode_runs"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
