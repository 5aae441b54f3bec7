"""A table written to a pipe or a file (a log, a forum post) is drawn whole: Rich's default there is
80 columns, which cut five variants' cells ("101.8…" for "101.8 1.22×") without saying what was lost."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DEMO = ROOT / "docs" / "results" / "demo-cpu" / "results.json"


def test_a_piped_report_keeps_every_cell_whole():
    out = subprocess.run(
        [sys.executable, "-m", "precmon", "report", str(DEMO)], capture_output=True, text=True, timeout=120
    ).stdout
    decode = next(line for line in out.splitlines() if "Decode (tok/s)" in line)
    assert "…" not in decode, decode
    assert decode.count("×") == 4, decode  # every variant's ratio against the baseline is there
    table_lines = [line for line in out.splitlines() if line.startswith(("┃", "│"))]
    assert table_lines and not any("…" in line for line in table_lines), [x for x in table_lines if "…" in x]
