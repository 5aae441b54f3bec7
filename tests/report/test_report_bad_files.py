"""Bad results files (issue 11 #7, #12): exit 2 and one line naming the file and the field.

Every case here crashed `precmon report`/`compare` with a traceback, or was accepted and printed
nonsense, before `report.load.load_document` validated what it loads.
"""

from __future__ import annotations

import copy
import io
import json

import pytest
from report_helpers import load

from precmon.cli.commands.report_cmd import compare_files, report_file


def call(fn, *args, **kw):
    out, err = io.StringIO(), io.StringIO()
    rc = fn(*args, stdout=out, stderr=err, **kw)
    return rc, out.getvalue(), err.getvalue()


def doc_with(change) -> dict:
    doc = copy.deepcopy(load("cpu_tiny.json"))
    change(doc)
    return doc


def _set(path: str, value):
    """A change that sets doc[...] along `path` ("variants.0.metrics.decode_tok_s")."""

    def change(doc):
        *parts, last = path.split(".")
        node = doc
        for p in parts:
            node = node[int(p)] if isinstance(node, list) else node[p]
        node[int(last) if isinstance(node, list) else last] = value

    return change


CASES = [
    (
        _set("variants.0.metrics.decode_tok_s", "fast"),
        'variants[0].metrics.decode_tok_s: expected a number, got "fast"',
    ),
    (_set("settings", "quick"), 'settings: expected an object, got "quick"'),
    (_set("host", []), "host: expected an object, got []"),
    (_set("host.gpus", {"name": 1}), 'host.gpus: expected a list, got {"name": 1}'),
    (_set("variants.0.precision", 16), "variants[0].precision: expected a string, got 16"),
    (_set("variants", {"F16": {}}), "variants: expected a list"),
    (_set("variants.0.runs", {}), "variants[0].runs: expected a list, got {}"),
    (_set("variants.0.metrics", [1]), "variants[0].metrics: expected an object, got [1]"),
    (_set("variants.0.errors", "boom"), 'variants[0].errors: expected a list, got "boom"'),
    (_set("variants.0.status", "great"), 'variants[0].status: expected "ok" or "partial" or "failed"'),
    (_set("variants.0.metrics.decode_tok_s", 1e308), "decode_tok_s: expected a number from 0 to 1e+12, got 1e+308"),
    (_set("variants.0.metrics.decode_tok_s", "NaN"), 'decode_tok_s: expected a number, got "NaN"'),
    (_set("variants.0.metrics.decode_tok_s", True), "decode_tok_s: expected a number, got true"),
    (_set("variants.1.metrics.prefill_ms_per_token", {"512": -0.5}), "prefill_ms_per_token.512: expected a number"),
    (_set("variants.0.runs.0.prompt_tokens", -5), "variants[0].runs[0].prompt_tokens: expected an integer from 0"),
    (_set("variants.0.runs.0.ok", "yes"), 'variants[0].runs[0].ok: expected true or false, got "yes"'),
    (_set("settings.prefill_tokens", ["512"]), 'settings.prefill_tokens[0]: expected an integer, got "512"'),
    (_set("variants.0.metrics.concurrency", {"4": 7}), "variants[0].metrics.concurrency.4: expected an object, got 7"),
    (
        _set("variants.0.metrics.concurrency", {"4": {"aggregate_tok_s": "fast"}}),  # an older file's name
        'variants[0].metrics.concurrency.4.aggregate_tok_s: expected a number, got "fast"',
    ),
    (
        _set("variants.0.metrics.concurrency", {"4": {"ttft_p99_s": -1}}),
        "variants[0].metrics.concurrency.4.ttft_p99_s: expected a number from 0",
    ),
    (_set("variants.0.metrics_stats", [1]), "variants[0].metrics_stats: expected an object, got [1]"),
    (
        _set("variants.0.metrics_stats", {"decode_tok_s": {"n": 3, "ci95": ["low", 2]}}),
        'variants[0].metrics_stats.decode_tok_s.ci95[0]: expected a number, got "low"',
    ),
    (
        _set("variants.0.metrics_stats", {"decode_tok_s": {"n": 3, "ci95": [5, 2]}}),
        "variants[0].metrics_stats.decode_tok_s.ci95: expected low <= high, got [5, 2]",
    ),
    (
        _set("variants.0.metrics_stats", {"decode_tok_s": {"n": 2.5}}),
        "metrics_stats.decode_tok_s.n: expected an integer",
    ),
    (_set("settings.target_ci_pct", "5%"), 'settings.target_ci_pct: expected a number, got "5%"'),
    # a size that is no token count was a table row "Prefill (-5 prompt)" / "(abc prompt)", exit 0
    (_set("variants.1.metrics.prefill_ms_per_token", {"-5": 0.5}), "prefill_ms_per_token: expected sizes"),
    (_set("variants.1.metrics.ttft_s", {"abc": 0.5}), "variants[1].metrics.ttft_s: expected sizes"),
    (_set("variants.0.metrics.concurrency", {"1e309": {}}), "variants[0].metrics.concurrency: expected sizes"),
    (
        _set("variants.0.extra_key", [[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]),
        "nested deeper",
    ),
]


@pytest.mark.parametrize(("change", "message"), CASES)
def test_bad_field_names_file_and_path(tmp_path, change, message):
    bad = tmp_path / "r.json"
    bad.write_text(json.dumps(doc_with(change)), encoding="utf-8")
    for fmt in (None, "md"):
        rc, out, err = call(report_file, bad, fmt)
        assert rc == 2 and out == ""
        assert err.startswith(f"precmon report: {bad}: ") and message in err, err
        assert err.count("\n") == 1
    rc, _, err = call(compare_files, [bad])
    assert rc == 2 and err.startswith(f"precmon compare: {bad}: ") and message in err


def test_the_example_message_of_the_issue(tmp_path):
    bad = tmp_path / "r.json"
    bad.write_text(json.dumps(doc_with(_set("variants.0.metrics.decode_tok_s", "fast"))), encoding="utf-8")
    err = call(report_file, bad)[2]
    assert err == f'precmon report: {bad}: variants[0].metrics.decode_tok_s: expected a number, got "fast"\n'


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        (b"[" * 200_000, "nested too deep"),
        (b'{"schema": "precmon.results/1", "variants": [], "x": NaN}', "not strict JSON: NaN"),
        (b'{"schema": "precmon.results/1", "variants": [], "x": -Infinity}', "not strict JSON: -Infinity"),
        (b'{"schema": "precmon.results/1", "variants": [{"label": "\xff\xfe"}]}', "not UTF-8 text (byte 0xff"),
        (b"", "not JSON (line 1"),
        (b"[]", "the document: expected an object, got []"),
    ],
)
def test_bad_bytes(tmp_path, raw, message):
    bad = tmp_path / "r.json"
    bad.write_bytes(raw)
    rc, _, err = call(report_file, bad, "csv")
    assert rc == 2 and err.startswith(f"precmon report: {bad}: ") and message in err, err
    assert err.count("\n") == 1


def test_a_folder(tmp_path):
    rc, _, err = call(report_file, tmp_path)
    assert rc == 2 and err == f"precmon report: {tmp_path}: is a folder, not a results file\n"
    rc, _, err = call(compare_files, [tmp_path])
    assert rc == 2 and err == f"precmon compare: {tmp_path}: is a folder, not a results file\n"


def test_a_file_name_with_escapes_is_shown_safely(tmp_path):
    bad = tmp_path / "r\x1b[31m.json"
    bad.write_text("{", encoding="utf-8")
    err = call(report_file, bad)[2]
    assert "\x1b" not in err and "/r.json: not JSON" in err


def test_impossible_values_in_an_invalid_run_are_not_an_error(tmp_path):
    """A run marked invalid keeps what the server said (a negative prefill): the report skips it."""

    def change(doc):
        run = doc["variants"][0]["runs"][0]
        run.update(ok=False, reason="prompt_tokens -5 from the server", prompt_tokens=-5, prefill_ms_per_token=-3.0)

    path = tmp_path / "r.json"
    path.write_text(json.dumps(doc_with(change)), encoding="utf-8")
    for fmt in (None, "md", "html", "csv", "json"):
        rc, out, err = call(report_file, path, fmt)
        assert rc == 0 and err == "" and out


def test_through_the_real_command_line(tmp_path):
    """`python -m precmon.cli report|compare` on a folder and a bad field: exit 2, one line, no traceback."""
    import os
    import subprocess
    import sys

    bad = tmp_path / "r.json"
    bad.write_text(json.dumps(doc_with(_set("variants.0.metrics.decode_tok_s", "fast"))), encoding="utf-8")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    for args in (["report", str(tmp_path)], ["report", str(bad), "--format", "md"], ["compare", str(bad)]):
        proc = subprocess.run(
            [sys.executable, "-m", "precmon.cli", *args], capture_output=True, text=True, env=env, timeout=60
        )
        assert proc.returncode == 2, proc.stderr
        assert proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr and proc.stdout == ""


def test_out_is_a_folder_leaves_no_temporary_file(tmp_path):
    target = tmp_path / "report.md"
    target.mkdir()
    src = tmp_path / "in.json"
    src.write_text(json.dumps(load("cpu_tiny.json")), encoding="utf-8")
    rc, out, err = call(report_file, src, "md", target)
    assert rc == 2 and err.startswith(f"precmon report: cannot write {target}: ") and err.count("\n") == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.json", "report.md"]
