"""Fixtures for the report tests: hand-written results files and golden-file comparison.

Set PRECMON_UPDATE_GOLDEN=1 to rewrite the golden files from the current output (then review
the diff before committing).
"""

from __future__ import annotations

import copy
import json
import os
from pathlib import Path
from typing import Any

import pytest

DATA = Path(__file__).parent / "data"
GOLDEN = Path(__file__).parent / "golden"


def load(name: str) -> dict[str, Any]:
    return json.loads((DATA / name).read_text(encoding="utf-8"))


@pytest.fixture
def cpu_doc() -> dict[str, Any]:
    """F16/Q8_0/Q4_K_M tiny models on a CPU (llama.cpp, RAPL package power), all ok."""
    return copy.deepcopy(load("cpu_tiny.json"))


@pytest.fixture
def spark_doc() -> dict[str, Any]:
    """Llama-3.1-8B on a DGX Spark: FP16, FP8, NVFP4 (partial) and a failed INT4-AWQ,
    with concurrency and long-context results."""
    return copy.deepcopy(load("spark_8b.json"))


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
