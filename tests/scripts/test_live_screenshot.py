"""scripts/live_screenshot.py reads the live sweep's typed document (`app.live.doc`, a ResultsDoc); it
read it as a dict (`doc["variants"]`) and crashed on a real GPU run. mypy checks scripts/ too; this
runs the function on a real ResultsDoc decoded by the codec."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from types import SimpleNamespace

from precmon.core.schema import ResultsDoc, from_json

TESTS = Path(__file__).resolve().parents[1]
SCRIPT = TESTS.parent / "scripts" / "live_screenshot.py"
DEMO = TESTS / "tui" / "data" / "demo-cpu-results.json"


def load():
    spec = importlib.util.spec_from_file_location("live_screenshot", SCRIPT)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_statuses_reads_the_typed_document():
    doc = from_json(ResultsDoc, json.loads(DEMO.read_text()))
    app = SimpleNamespace(live=SimpleNamespace(doc=doc))
    assert load()._statuses(app) == [("F16", "ok", 9), ("Q8_0", "ok", 9), ("Q4_K_M", "ok", 9)]
