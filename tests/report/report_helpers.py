"""Shared helpers for the report tests: the hand-written results files and golden-file checks.

A uniquely named module (not conftest) so that `import` finds this one whatever other test
folders put on sys.path. Set PRECMON_UPDATE_GOLDEN=1 to rewrite the golden files from the
current output (then review the diff before committing).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from precmon.core.schema import ResultsDoc, from_json
from precmon.report.load import validate

DATA = Path(__file__).parent / "data"
GOLDEN = Path(__file__).parent / "golden"


def load(name: str) -> dict[str, Any]:
    """A data file as its JSON (for tests that write or damage it)."""
    return json.loads((DATA / name).read_text(encoding="utf-8"))


def load_doc(name: str) -> ResultsDoc:
    """A data file as the report reads it: validated, typed (`report.load.validate`)."""
    return validate(load(name), name)


def typed(d: dict[str, Any]) -> ResultsDoc:
    """A test's literal document as the typed model, unchecked (`core.schema.from_json`): as the
    TUI's live results reach the report, so partial documents need not pass the loader."""
    return from_json(ResultsDoc, d)


def check_golden(name: str, actual: str) -> None:
    """Compare `actual` with golden/<name> exactly, or rewrite it under PRECMON_UPDATE_GOLDEN=1."""
    path = GOLDEN / name
    if os.environ.get("PRECMON_UPDATE_GOLDEN") == "1":
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(actual, encoding="utf-8")
        return
    assert path.exists(), f"{path} missing: run with PRECMON_UPDATE_GOLDEN=1 to create it"
    expected = path.read_text(encoding="utf-8")
    assert actual == expected, f"{name} differs from the golden file (PRECMON_UPDATE_GOLDEN=1 rewrites it)"
