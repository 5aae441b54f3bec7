"""One precision classifier (issue 18): the auto-sweep and the report's advice agree."""

from __future__ import annotations

import pytest

from precmon.core.precision import QUANT_FAMILY, family
from precmon.core.schema import VariantResult, from_json
from precmon.report.analysis.quality import precision_class
from precmon.sweep.auto import precision_of


def _v(fields: dict) -> VariantResult:
    """A variant of `fields` (no label: an empty one, which names no precision)."""
    return from_json(VariantResult, {"label": ""} | fields)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Q4_K_M", "int4"),
        ("q8_0", "int8"),
        ("BF16", "bf16"),
        ("MXFP4", "mxfp4"),
        ("gpt-oss-20b-mxfp4", "mxfp4"),
        ("NVFP4", "nvfp4"),
        ("Llama-FP4", "fp4"),  # which FP4 the name does not say
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
        cls = precision_class(_v({"label": quant}))
        assert cls == {"bf16": "fp16", "int6": None, "int5": None}.get(fam, fam)
    assert precision_of(None) == "unknown"
    assert precision_of("Q3_K_M") == "q3_k_m"  # unknown names keep their own (lower-case) name


def test_mxfp4_is_its_own_family_with_its_own_caveat():
    """MXFP4 is not NVFP4: a power-of-two scale per 32 values, coarser than NVFP4's FP8 per 16."""
    from precmon.report.analysis.quality import quality_caveat, rank

    mx, nv = _v({"precision": "mxfp4", "label": "MXFP4"}), _v({"precision": "nvfp4", "label": "NVFP4"})
    assert (
        precision_class(mx) == "mxfp4" and "E8M0" in quality_caveat(mx) and "NVFP4 typically" not in quality_caveat(mx)
    )
    assert quality_caveat(nv) == "NVFP4 typically loses 1-3% quality."
    assert rank(nv) < rank(_v({"precision": "int4"})) < rank(mx)
    # an older demo file stored MXFP4's precision as "fp4": its label names the kind
    assert precision_class(_v({"precision": "fp4", "label": "MXFP4"})) == "mxfp4"
    assert precision_class(_v({"precision": "fp4", "label": "NVFP4"})) == "nvfp4"
    assert precision_class(_v({"precision": "fp4", "label": "x"})) == "fp4"
    assert "find out which one" in quality_caveat(_v({"precision": "fp4"}))
    assert precision_class(_v({"precision": "fp16", "label": "MXFP4"})) == "fp16"  # the precision decides
