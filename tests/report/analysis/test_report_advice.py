"""Workload advice: the variant that measured best on the metric each workload needs."""

from __future__ import annotations

from precmon.core.schema import VariantResult, from_json
from precmon.report.analysis.advice import advise
from precmon.report.analysis.quality import precision_class, quality_caveat


def _v(fields: dict) -> VariantResult:
    """A variant of `fields` (no label: an empty one, which names no precision)."""
    return from_json(VariantResult, {"label": ""} | fields)


def by_key(doc, **kw):
    return {a.key: a for a in advise(doc, **kw)}


def test_every_workload_of_the_decision_table(cpu_doc):
    assert list(by_key(cpu_doc)) == [
        "chat",
        "document",
        "coding",
        "batch",
        "battery",
        "multi_user",
        "max_quality",
        "dgx_spark",
    ]


def test_cpu_choices_and_numbers(cpu_doc):
    a = by_key(cpu_doc)
    assert a["chat"].choice == "Q4_K_M"
    assert a["chat"].reason == "Q4_K_M decodes 756.2 tok/s vs Q8_0 553.4, F16 402.1."
    assert "2-5%" in a["chat"].caveat  # INT4 quality cost from report/quality.py QUALITY_CAVEAT
    # dequantization makes Q4_K_M prefill slower on this CPU: document analysis goes to Q8_0
    assert a["document"].choice == "Q8_0"
    assert a["document"].reason.startswith("Q8_0 prefills a 1K prompt at 0.500 ms/token")
    assert a["battery"].choice == "Q4_K_M" and "0.0496 J/token" in a["battery"].reason
    assert a["coding"].choice == "Q4_K_M" and "combined (geometric mean) Q4_K_M 1.27×" in a["coding"].reason
    assert a["max_quality"].choice == "F16" and a["max_quality"].caveat == ""


def test_missing_metrics_are_said(cpu_doc):
    a = by_key(cpu_doc)
    assert a["multi_user"].choice is None
    assert a["multi_user"].reason == "Concurrency was not measured: run with --concurrency 1,4,16."
    assert a["dgx_spark"].choice is None and "not from a DGX Spark" in a["dgx_spark"].reason
    assert a["batch"].reason.startswith("No concurrency run")
    for v in cpu_doc.variants:
        v.metrics["energy_decode_j_per_token"] = None
    battery = by_key(cpu_doc)["battery"]
    assert battery.choice == "Q4_K_M" and battery.reason.startswith("energy per token not measured; ")
    for v in cpu_doc.variants:
        v.metrics["power_decode_w"] = None
        v.metrics["decode_tok_s"] = None
    a = by_key(cpu_doc)
    assert a["battery"].choice is None
    assert a["battery"].reason == "Power under decode (W) was not measured for any usable variant."
    assert a["chat"].choice is None
    assert a["chat"].reason == "Decode (tok/s) was not measured for any usable variant."
    assert a["coding"].reason == "A coding agent needs both decode and prefill measured."


def test_spark_uses_concurrency_and_memory(spark_doc):
    a = by_key(spark_doc)
    assert a["multi_user"].choice == "NVFP4"
    assert a["multi_user"].reason == (
        "NVFP4 total at 4 streams 128.3 tok/s vs FP8 86.5, FP16 48.0. "
        "Each of its 4 users decodes 32.1 tok/s, TTFT p50 1.30 s."
    )
    assert a["batch"].choice == "NVFP4"
    assert a["dgx_spark"].choice == "NVFP4" and "5.10 GB of the 128 GB" in a["dgx_spark"].reason
    assert a["max_quality"].choice == "FP16"


def test_failed_variant_never_chosen(spark_doc):
    # make the failed variant look best on paper: it must still not be picked
    spark_doc.variants[3].metrics["decode_tok_s"] = 99.0
    a = by_key(spark_doc)
    assert a["chat"].choice == "NVFP4"
    assert "INT4-AWQ" not in a["chat"].reason


def test_document_size_measured_by_most(spark_doc):
    # NVFP4 has no 16K prefill (cache hits): compare at 4K, which all three measured
    a = by_key(spark_doc)
    assert a["document"].reason.startswith("NVFP4 prefills a 4K prompt at 0.290 ms/token")
    spark_doc.variants[2].metrics["prefill_ms_per_token"]["16384"] = 0.41
    assert by_key(spark_doc)["document"].reason.startswith("NVFP4 prefills a 16K prompt at 0.410")


def test_precision_classes():
    assert precision_class(_v({"precision": "bf16"})) == "fp16"
    assert precision_class(_v({"label": "Q4_K_M"})) == "int4"
    assert precision_class(_v({"label": "Q8_0"})) == "int8"
    assert precision_class(_v({"precision": "nvfp4"})) == "nvfp4"
    assert precision_class(_v({"label": "AWQ"})) == "int4"
    assert precision_class(_v({"label": "FP8-dynamic"})) == "fp8"
    assert precision_class(_v({"label": "mystery"})) is None
    assert quality_caveat(_v({"precision": "fp8"})) == "FP8 typically loses <2% quality on recent models."
    assert "unknown" in quality_caveat(_v({"label": "mystery"}))
