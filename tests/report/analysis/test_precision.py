"""One precision classifier (issue 18): the auto-sweep and the report's advice agree."""

from __future__ import annotations

import pytest

from precmon.core.precision import QUANT_FAMILY, family
from precmon.report.analysis.quality import precision_class
from precmon.sweep.auto import precision_of


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Q4_K_M", "int4"),
        ("q8_0", "int8"),
        ("BF16", "bf16"),
        ("MXFP4", "fp4"),
        ("Llama-3.1-8B-FP8-dynamic", "fp8"),
        ("w8a8", "int8"),
        ("IQ4_XS", "int4"),
        ("float32", "fp32"),
        ("mystery", None),
        ("", None),
        (None, None),
    ],
)
def test_family(text, expected):
    assert family(text) == expected


def test_auto_sweep_and_report_use_the_same_families():
    for quant, fam in QUANT_FAMILY.items():
        assert precision_of(quant) == fam
        cls = precision_class({"label": quant})
        assert cls == {"bf16": "fp16", "fp4": "nvfp4", "int6": None, "int5": None}.get(fam, fam)
    assert precision_of(None) == "unknown"
    assert precision_of("Q3_K_M") == "q3_k_m"  # unknown names keep their own (lower-case) name
