"""scripts/power_log_compare.py lines an nvidia-smi log up with each decode run's window (first token →
end, in Unix seconds) and averages only the samples inside, per variant."""

from __future__ import annotations

import datetime as dt
import importlib.util
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "power_log_compare.py"
T0 = 1_764_612_000.0  # 2025-12-01 18:00:00 UTC


def load():
    spec = importlib.util.spec_from_file_location("power_log_compare", SCRIPT)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _log(tmp_path: Path, rows: list[tuple[float, str, str]]) -> Path:
    lines = ["timestamp, power.draw [W], power.draw.instant [W], clocks.current.sm [MHz]"]
    for t, draw, inst in rows:
        stamp = dt.datetime.fromtimestamp(t, dt.timezone.utc)
        lines.append(f"{stamp:%Y/%m/%d %H:%M:%S}.{int(t * 1000) % 1000:03d}, {draw}, {inst}, 1980 MHz")
    p = tmp_path / "smi.csv"
    p.write_text("\n".join(lines) + "\n")
    return p


def _decode(start: float, end: float, cut: float, ok: bool = True) -> dict:
    return {"phase": "decode", "ok": ok, "extra": {"window_unix_s": [start, end], "prefill_part": {"seconds": cut}}}


def test_only_samples_inside_first_token_to_end_are_averaged(tmp_path: Path) -> None:
    m = load()
    # 100 ms samples: 100 W before the run and during its prefill (first 0.5 s), 600 W while decoding,
    # 100 W after; one [N/A] instant reading inside is skipped, not read as 0.
    rows = []
    for i in range(60):
        t = T0 + i * 0.1
        w = "600.00 W" if 10 <= i < 30 else "100.00 W"
        rows.append((t, w, "[N/A]" if i == 20 else w))
    log = m.read_log(_log(tmp_path, rows))
    results = {
        "variants": [
            {
                "label": "F16",
                "metrics": {"power_decode_w": 606.0},
                "runs": [_decode(T0 + 0.45, T0 + 2.95, 0.5), _decode(T0 + 4, T0 + 5, 0.1, ok=False)],
            },
            {"label": "Q4", "metrics": {"power_decode_w": 400.0}, "runs": [{"phase": "prefill", "ok": True}]},
        ]
    }
    f16, q4 = m.compare(results, log)
    assert (f16["decode_runs"], f16["smi_draw_samples"], f16["smi_draw_w"]) == (1, 20, 600.0)
    assert (f16["smi_instant_samples"], f16["smi_instant_w"], f16["diff_instant_pct"]) == (19, 600.0, 1.0)
    assert (q4["decode_runs"], q4["smi_draw_w"], q4["diff_draw_pct"]) == (0, None, None)
    table = m.markdown([f16, q4])
    assert "| F16 | 606.0 | 600.0 (19) | +1.0% | 600.0 (20) | +1.0% |" in table
    assert "| Q4 | 400.0 | n/a | n/a | n/a | n/a |" in table


def test_a_log_without_power_columns_is_one_line_naming_the_file(tmp_path: Path) -> None:
    p = tmp_path / "bad.csv"
    p.write_text("timestamp, temperature.gpu\n2026/12/01 18:00:00.000, 40\n")
    with pytest.raises(SystemExit, match=r"bad.csv: line 1: expected a timestamp and a power.draw column"):
        load().read_log(p)
