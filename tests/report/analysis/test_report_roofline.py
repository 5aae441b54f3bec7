"""Roofline maths: device bandwidth table, bytes per token, fraction of the limit, the sentence."""

from __future__ import annotations

import pytest
from report_helpers import typed

from precmon.core.schema import VariantResult
from precmon.report.analysis.roofline import match_device, model_bytes, roofline


def _v(**fields) -> VariantResult:
    return VariantResult("v", **fields)


@pytest.mark.parametrize(
    ("name", "gbs"),
    [
        ("NVIDIA H200", 4800.0),
        ("NVIDIA H200 NVL", 4800.0),
        ("NVIDIA H100 80GB HBM3", 3350.0),
        ("NVIDIA H100 PCIe", 2000.0),
        ("NVIDIA H100 NVL", 3900.0),
        ("NVIDIA GeForce RTX 4090", 1008.0),
        ("NVIDIA GB10", 273.0),
        ("AMD Radeon 8060S Graphics", 256.0),
        ("AMD Strix Halo", 256.0),
        ("Orin (nvgpu)", 204.8),
        ("Jetson AGX Orin", 204.8),
    ],
)
def test_device_table(name, gbs):
    assert match_device(name)[1] == gbs


@pytest.mark.parametrize("name", ["NVIDIA GeForce RTX 4090 Laptop GPU", "Orin NX", "AMD Ryzen 9 7950X", ""])
def test_unknown_devices(name):
    assert match_device(name) is None


def test_bytes_prefer_model_size_then_memory():
    assert model_bytes(_v(model_size_bytes=5.0e9, metrics={"memory_gb": 7.0})) == (5.0e9, "model size")
    assert model_bytes(_v(metrics={"model_size_bytes": 4.0e9})) == (4.0e9, "model size")
    assert model_bytes(_v(metrics={"memory_gb": 7.0})) == (7.0e9, "from memory_gb, an upper bound")
    assert model_bytes(_v(metrics={"memory_gb": None})) is None


def test_spark_fractions(spark_doc):
    r = roofline(spark_doc)
    assert (r.device, r.bandwidth_gbs, r.source) == ("NVIDIA GB10 (DGX Spark)", 273.0, "device table")
    fp16 = r.entries[0]
    assert fp16.limit_tok_s == pytest.approx(273e9 / 16060522496)
    assert fp16.fraction == pytest.approx(13.5 * 16060522496 / 273e9)  # bytes × tok/s ÷ bandwidth
    assert [round(e.fraction, 2) if e.fraction else None for e in r.entries] == [0.79, 0.75, 0.72, None]
    assert r.summary == (
        "NVFP4 decode is 2.88× FP16 with 3.2× fewer bytes per token: 72% of the bandwidth "
        "limit (FP16: 79%) — bandwidth-bound: decode speed follows the bytes read."
    )


def test_override_bandwidth(spark_doc):
    r = roofline(spark_doc, bandwidth_gbs=546.0)
    assert (r.bandwidth_gbs, r.source) == (546.0, "--bandwidth-gbs")
    assert r.entries[0].fraction == pytest.approx(13.5 * 16060522496 / 546e9)


def test_cpu_unknown_bandwidth(cpu_doc):
    r = roofline(cpu_doc)
    assert r.bandwidth_gbs is None and r.device == "CPU"
    assert all(e.fraction is None for e in r.entries)
    assert "pass --bandwidth-gbs" in r.lines()[0]
    assert r.summary.startswith("Q4_K_M decode is 1.88× F16 with 3.2× fewer bytes per token; the bandwidth")


def test_overhead_bound_sentence():
    """The roofline docstring's example: Q4 only 1.3× F16 because decode runs far from the limit."""
    doc = typed(
        {
            "host": {"gpus": [{"name": "NVIDIA GeForce RTX 4090"}]},
            "variants": [
                {"label": "F16", "model_size_bytes": 16.0e9, "metrics": {"decode_tok_s": 15.0}},
                {"label": "Q4_K_M", "model_size_bytes": 4.9e9, "metrics": {"decode_tok_s": 19.5}},
            ],
        }
    )
    r = roofline(doc)
    q4 = r.entries[1]
    assert q4.fraction == pytest.approx(4.9e9 * 19.5 / 1008e9)
    assert "Q4_K_M decode is 1.30× F16" in r.summary
    assert "9% of the bandwidth limit (F16: 24%) — overhead-bound, not bandwidth-bound" in r.summary


def test_above_limit_is_flagged(cpu_doc):
    lines = roofline(cpu_doc, bandwidth_gbs=89.6).lines()
    assert "117% of the limit (above the memory-bandwidth limit" in lines[1]
