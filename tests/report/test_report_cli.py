"""`run_report` / `run_compare`: what the CLI calls, exit codes and one-line messages."""

from __future__ import annotations

import io
import json
import os
import shutil
import stat

import pytest
from report_helpers import DATA

from precmon.cli.commands.report_cmd import compare_files as run_compare
from precmon.cli.commands.report_cmd import report_file as run_report

CPU = DATA / "cpu_tiny.json"
SPARK = DATA / "spark_8b.json"


def call(fn, *args, **kw):
    out, err = io.StringIO(), io.StringIO()
    rc = fn(*args, stdout=out, stderr=err, **kw)
    return rc, out.getvalue(), err.getvalue()


def test_terminal_report():
    rc, out, err = call(run_report, CPU)
    assert rc == 0 and err == ""
    assert "Decode (tok/s)" in out and "Which precision for which workload" in out
    assert "Monthly energy" in out


@pytest.mark.parametrize(
    ("fmt", "needle"),
    [
        ("md", "| Metric |"),
        ("csv", "variant,precision,metric"),
        ("json", '"schema": "precmon.results/1"'),
        ("html", "<svg"),
    ],
)
def test_format_to_stdout(fmt, needle):
    rc, out, _ = call(run_report, SPARK, fmt)
    assert rc == 0 and needle in out


def test_out_file_format_from_suffix(tmp_path):
    target = tmp_path / "deep" / "report.md"
    rc, out, _ = call(run_report, CPU, None, target, "Q8_0", 10, 0.25, 89.6)
    assert rc == 0 and out == f"wrote {target}\n"
    text = target.read_text(encoding="utf-8")
    assert "Q8_0 (int8, baseline)" in text and "89.6 GB/s (--bandwidth-gbs)" in text
    assert "Cost at 10 h/day" in text


def test_out_through_a_link_keeps_the_link(tmp_path):
    """`--out` renamed a temporary over the path: a symlink became a regular file, and as root
    `--out /dev/stdout` (or /dev/full, /dev/null) replaced the system's device node (issue 11 #16,
    fixed for --json only)."""
    target = tmp_path / "real.md"
    target.write_text("old")
    link = tmp_path / "link.md"
    link.symlink_to(target)
    rc, out, _ = call(run_report, CPU, "md", link)
    assert rc == 0 and link.is_symlink() and "| Metric |" in target.read_text(encoding="utf-8")
    fifo = tmp_path / "pipe.md"  # a device-like file: streamed, never replaced
    os.mkfifo(fifo)
    reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
    try:
        rc, out, _ = call(run_report, CPU, "md", fifo)
        assert rc == 0 and stat.S_ISFIFO(os.lstat(fifo).st_mode) and b"| Metric |" in os.read(reader, 1 << 16)
    finally:
        os.close(reader)


def test_missing_file(tmp_path):
    rc, out, err = call(run_report, tmp_path / "nope.json")
    assert rc == 2 and out == ""
    assert err == f"precmon report: {tmp_path / 'nope.json'}: no such file\n"


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("{not json", "not JSON (line 1"),
        ('{"schema": "other/1"}', "not a precmon results file"),
        ('{"schema": "precmon.results/1", "variants": {}}', "variants: expected a list, got {}"),
        ('{"schema": "precmon.results/1", "variants": [{"metrics": {}}]}', "variants[0].label: expected a string"),
        (
            '{"schema": "precmon.results/1", "variants": [{"label": "A", "metrics": []}]}',
            "variants[0].metrics: expected an object, got []",
        ),
    ],
)
def test_bad_files_exit_2_naming_the_file(tmp_path, content, message):
    bad = tmp_path / "bad.json"
    bad.write_text(content, encoding="utf-8")
    rc, _, err = call(run_report, bad, "md")
    assert rc == 2 and err.startswith(f"precmon report: {bad}: ") and message in err
    assert err.count("\n") == 1


def test_bad_baseline_and_options():
    rc, _, err = call(run_report, CPU, "md", None, "FP8")
    assert rc == 2 and err == (f"precmon report: {CPU}: baseline 'FP8' is not a variant (have: F16, Q8_0, Q4_K_M)\n")
    assert call(run_report, CPU, "xml")[0] == 2
    assert call(run_report, CPU, None, "x.txt")[0] == 2
    rc, _, err = call(run_report, CPU, "md", None, None, 25)
    assert rc == 2 and "--hours-per-day 25" in err
    assert call(run_report, CPU, "md", None, None, None, -1)[0] == 2
    assert call(run_report, CPU, "md", None, None, None, None, 0)[0] == 2


def test_compare(tmp_path):
    rc, out, _ = call(run_compare, [CPU, SPARK])
    assert rc == 0 and "precmon comparison" in out and "spark · GB10 · NVFP4" in out
    target = tmp_path / "cmp.html"
    rc, _, _ = call(run_compare, [CPU, SPARK], None, target)
    assert rc == 0 and "<table" in target.read_text(encoding="utf-8")


def test_compare_bad_input(tmp_path):
    assert call(run_compare, [])[0] == 2
    copy = tmp_path / "copy.json"
    shutil.copy(CPU, copy)
    bad = tmp_path / "b.json"
    bad.write_text(json.dumps({"schema": "x"}), encoding="utf-8")
    rc, _, err = call(run_compare, [copy, bad], "md")
    assert rc == 2 and err.startswith(f"precmon compare: {bad}: not a precmon results file")
