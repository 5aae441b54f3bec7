"""CSV is safe to open (issue 39 #5): a label, precision, warning or environment value starting
with `=`, `+`, `-`, `@`, a tab or a carriage return is what a spreadsheet runs as a formula; a
label can come from a shared sweep file or from the server's model name. Such text cells get a
leading apostrophe (the usual rule); numbers, negative ones included, stay numbers."""

from __future__ import annotations

import copy
import csv
import io
import json

import pytest
from report_helpers import load

from precmon.cli.commands.report_cmd import compare_files, report_file
from precmon.report.render.csv import spreadsheet_safe

FORMULAS = ['=HYPERLINK("http://x","y")', "+1+1", "-2+3", "@SUM(A1)", "\t=1", "\r=1"]


@pytest.mark.parametrize("text", FORMULAS)
def test_a_cell_a_spreadsheet_would_run_gets_an_apostrophe(text):
    assert spreadsheet_safe(text) == "'" + text


@pytest.mark.parametrize("text", ["F16", "Q4_K_M", "", "-0.5", "+3", "1e-05", "-1.5e+03", "'already"])
def test_plain_text_and_numbers_stay_as_they_are(text):
    assert spreadsheet_safe(text) == text


def _rows(text: str) -> list[list[str]]:
    return list(csv.reader(io.StringIO(text)))


def _export(tmp_path, fn, *paths):
    out = tmp_path / "x.csv"
    rc = fn(*paths, "csv", out, stdout=io.StringIO(), stderr=io.StringIO())
    assert rc == 0
    return _rows(out.read_text(encoding="utf-8"))


def test_report_csv_neutralises_labels_precisions_and_warnings(tmp_path):
    doc = copy.deepcopy(load("cpu_tiny.json"))
    v = doc["variants"][0]
    v["label"], v["precision"] = "=1+2", "@int4"
    v["warnings"] = ["-noisy: =cmd|' /C calc'!A0"]
    path = tmp_path / "r.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    rows = _export(tmp_path, report_file, path)
    cells = [c for r in rows for c in r]
    assert not [c for c in cells if c[:1] in ("=", "+", "@", "\t", "\r") or (c[:1] == "-" and not _number(c))]
    mine = [r for r in rows if r[0] == "'=1+2"]
    assert mine and all(r[1] == "'@int4" for r in mine)
    assert ["'=1+2", "'@int4", "warning", "", "'-noisy: =cmd|' /C calc'!A0", "", "", "", ""] in rows


def test_compare_csv_neutralises_environment_values(tmp_path):
    a, b = copy.deepcopy(load("vm_h200.json")), copy.deepcopy(load("vm_l40s.json"))
    a["host"].setdefault("fingerprint", {})["cpu_governor"] = "=EVIL()"
    b["host"].setdefault("fingerprint", {})["cpu_governor"] = "performance"
    pa, pb = tmp_path / "a.json", tmp_path / "b.json"
    pa.write_text(json.dumps(a), encoding="utf-8")
    pb.write_text(json.dumps(b), encoding="utf-8")
    rows = _export(tmp_path, lambda *p, **kw: compare_files(list(p[:2]), *p[2:], **kw), pa, pb)
    values = [r[4] for r in rows if len(r) > 4 and r[2] == "fingerprint:fingerprint.cpu_governor"]
    assert "'=EVIL()" in values and "=EVIL()" not in values


def _number(cell: str) -> bool:
    try:
        float(cell)
    except ValueError:
        return False
    return True
