"""The HTML export opens in headless Chromium with no console errors and shows the table.

Needs Debian's `chromium` package (`apt-get install -y chromium`); CI installs it. Skipped, with
that reason, only when no chromium binary is on PATH.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from precmon.report.export import render

CHROMIUM = next((p for p in (shutil.which(n) for n in ("chromium", "chromium-browser")) if p), None)
pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="chromium not installed (Debian: apt-get install -y chromium)")

CONSOLE = re.compile(r":CONSOLE[:(]\d*\)?\]\s*(.*)")


def open_in_chromium(page: Path) -> tuple[str, list[str]]:
    """(DOM after load, console messages) of `page` in headless Chromium."""
    proc = subprocess.run(
        [
            CHROMIUM,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            "--enable-logging=stderr",
            "--v=0",
            "--dump-dom",
            page.resolve().as_uri(),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    console = [m.group(1) for line in proc.stderr.splitlines() if (m := CONSOLE.search(line))]
    return proc.stdout, console


def test_console_errors_are_detected(tmp_path):
    """Control: a page with a script error must be caught, so the real check can fail."""
    bad = tmp_path / "bad.html"
    bad.write_text("<!DOCTYPE html><html><body><script>notDefined();</script></body></html>")
    _, console = open_in_chromium(bad)
    assert any("notDefined" in m for m in console)


def test_report_page_loads_clean(tmp_path, spark_doc):
    page = tmp_path / "report.html"
    page.write_text(render(spark_doc, "html", hours_per_day=10, price_per_kwh=0.3), encoding="utf-8")
    dom, console = open_in_chromium(page)
    assert console == []
    assert '<table id="comparison">' in dom
    assert dom.count("<svg") == 4 and "NVFP4" in dom and "Which precision for which workload" in dom
