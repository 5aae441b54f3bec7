"""Fixtures for the report tests (helpers live in report_helpers.py)."""

from __future__ import annotations

import pytest
from report_helpers import load_doc

from precmon.core.schema import ResultsDoc


@pytest.fixture
def cpu_doc() -> ResultsDoc:
    """F16/Q8_0/Q4_K_M tiny models on a CPU (llama.cpp, RAPL package power), all ok."""
    return load_doc("cpu_tiny.json")


@pytest.fixture
def spark_doc() -> ResultsDoc:
    """Llama-3.1-8B on a DGX Spark: FP16, FP8, NVFP4 (partial) and a failed INT4-AWQ,
    with concurrency and long-context results."""
    return load_doc("spark_8b.json")
