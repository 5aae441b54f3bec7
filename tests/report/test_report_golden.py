"""Golden-file tests: fixed results JSON → exact Markdown and CSV (and a compare table)."""

from __future__ import annotations

from report_helpers import check_golden

from precmon.report.export import render, render_compare
from precmon.report.render.csv import to_csv


def test_cpu_markdown(cpu_doc):
    check_golden("cpu_tiny.md", render(cpu_doc, "md"))


def test_cpu_csv(cpu_doc):
    check_golden("cpu_tiny.csv", to_csv(cpu_doc))


def test_spark_markdown_with_hours_price(spark_doc):
    check_golden("spark_8b.md", render(spark_doc, "md", hours_per_day=10, price_per_kwh=0.30))


def test_spark_csv(spark_doc):
    check_golden("spark_8b.csv", to_csv(spark_doc))


def test_cpu_markdown_with_bandwidth_and_baseline(cpu_doc):
    check_golden("cpu_tiny_q8_baseline_bw.md", render(cpu_doc, "md", baseline="Q8_0", bandwidth_gbs=89.6))


def test_compare_markdown(cpu_doc, spark_doc):
    md = render_compare([cpu_doc, spark_doc], "md", ["cpu_tiny.json", "spark_8b.json"])
    check_golden("compare.md", md)
