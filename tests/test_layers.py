"""The layer contract (docs/design.md §2): nothing below precmon.tui imports textual, layers point down."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
HEADLESS = [
    "precmon.power.sampler",
    "precmon.power.doctor",
    "precmon.servers.detect",
    "precmon.measure.bench",
    "precmon.sweep.runner",
    "precmon.report.export",
    "precmon.report.table",
    "precmon.testbed.models",
    "precmon.testbed.vllm_env",
    "precmon.testbed.vllm_server",
    "precmon.cli.commands.bench_cmd",
    "precmon.cli.commands.sweep_cmd",
    "precmon.cli.commands.doctor_cmd",
    "precmon.cli.commands.report_cmd",
    "precmon.exporter.serve",
    "precmon.cli.commands.exporter_cmd",
]


@pytest.mark.parametrize("module", HEADLESS)
def test_headless_module_does_not_load_textual(module):
    code = f"import sys, {module}; sys.exit(1 if any(m.split('.')[0] == 'textual' for m in sys.modules) else 0)"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0, f"{module} pulled in textual: {proc.stderr}"


def test_import_linter_contracts_hold():
    exe = shutil.which("lint-imports") or str(Path(sys.executable).parent / "lint-imports")
    assert Path(exe).exists(), "import-linter is a test dependency (pip install -e '.[test]')"
    proc = subprocess.run([exe], cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_cli_help_lists_every_command():
    proc = subprocess.run([sys.executable, "-m", "precmon.cli", "--help"], capture_output=True, text=True)
    assert proc.returncode == 0
    for cmd in ("watch", "bench", "sweep", "report", "compare", "doctor", "demo", "exporter"):
        assert cmd in proc.stdout
    assert "decode tok/s" in proc.stdout  # the help teaches the metric definitions


def test_version():
    from precmon import __version__

    proc = subprocess.run([sys.executable, "-m", "precmon.cli", "--version"], capture_output=True, text=True)
    assert proc.stdout.strip() == f"precmon {__version__}"
