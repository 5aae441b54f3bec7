"""precmon.report is plain Python: importing all of it loads no `textual`."""

from __future__ import annotations

import subprocess
import sys

MODULES = [
    "analysis.advice",
    "analysis.compare",
    "analysis.energy",
    "export",
    "fmt",
    "formats",
    "render.html.page",
    "render.markdown",
    "render.csv",
    "render.llamabench",
    "importers.dispatch",
    "load",
    "model",
    "analysis.quality",
    "analysis.roofline",
    "sections",
    "rows",
    "sparkline",
    "table",
    "render.terminal",
]


def test_no_textual():
    code = "; ".join(f"import precmon.report.{m}" for m in MODULES)
    code += "; import sys; print(sorted(m for m in sys.modules if m.split('.')[0] == 'textual'))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
