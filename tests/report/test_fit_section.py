"""The "Memory fit" section in every report format (docs/design.md §4 "Memory fit"): one row per
variant with a `fit`, its figures beside its inputs, n/a with why where an input is missing; the
table's rows come from the `fit_*` metrics; a file without fits has no section."""

from __future__ import annotations

import copy
import io
import json

from rich.console import Console

from precmon.core.schema import from_json
from precmon.core.schema.model import ResultsDoc
from precmon.report.export import render
from precmon.report.render.terminal import render_terminal
from precmon.report.sections import build_report
from precmon.report.table import build_table
from tests.exporter.conftest import RESULTS

SPARK_FIT = {
    "usable_bytes": 119_000_000_000,
    "basis": "/proc/meminfo: MemAvailable 110.8 GiB before the server started",
    "weights_bytes": 8_500_000_000,
    "weights_from": "the server's model size (model_info.size_bytes)",
    "kv_bytes_per_token": 131072,
    "users_at": {"8192": 102, "32768": 25},
    "context_for_users": {"1": 843018, "4": 210754, "16": 52688},
    "server_capacity_tokens": 8192,
    "check": "ok: the server's own cache of 8192 tokens (1.0 GiB) fits beside the weights",
}


def _doc(with_fit: bool = True) -> ResultsDoc:
    raw = json.loads((RESULTS / "cpu_tiny.json").read_text())
    if with_fit:
        first, second = raw["variants"][0], raw["variants"][1]
        first["fit"] = copy.deepcopy(SPARK_FIT)
        first["metrics"] |= {
            "fit_users_at": SPARK_FIT["users_at"],
            "fit_context_for_users": SPARK_FIT["context_for_users"],
        }
        second["fit"] = {
            "usable_bytes": 119_000_000_000,
            "basis": "x",
            "users_at": {"8192": None, "32768": None},
            "context_for_users": {},
            "reason": "n/a: no KV bytes per token (a launched llama-server logs its KV cache)",
        }
    return from_json(ResultsDoc, raw)


def test_every_format_has_the_section():
    doc = _doc()
    md = render(doc, "md")
    assert "## Memory fit" in md
    assert "| F16 | 119.00 | 8.50 | 128.00 | 102 | 25 | 843,018 | 210,754 | 52,688 |" in md.replace(
        doc.variants[0].label, "F16"
    )
    assert "n/a: no KV bytes per token" in md and "weights + users × context × KV bytes ≤ usable memory" in md
    html = render(doc, "html")
    assert "<h2>Memory fit</h2>" in html and '<table id="fit">' in html
    csv = render(doc, "csv")
    label = doc.variants[0].label
    assert f"{label},{doc.variants[0].precision},fit_users_at,32768,25,users" in csv
    assert f"{label},{doc.variants[0].precision},fit_usable_bytes,,119000000000,B" in csv
    assert json.loads(render(doc, "json"))["variants"][0]["fit"] == SPARK_FIT
    out = io.StringIO()
    Console(file=out, width=220, color_system=None).print(render_terminal(build_report(doc)))
    assert "Memory fit" in out.getvalue() and "843,018" in out.getvalue()


def test_the_table_rows_and_no_section_without_fits():
    rows = {r.label: r for r in build_table(_doc()).rows}
    assert rows["Users that fit at 32K context"].cells[0].text.startswith("25")
    assert "Context that fits, 4 user(s)" in rows
    plain = _doc(with_fit=False)
    assert "Memory fit" not in render(plain, "md") and not build_report(plain).fit
    assert not any(r.label.startswith("Users that fit") for r in build_table(plain).rows)
