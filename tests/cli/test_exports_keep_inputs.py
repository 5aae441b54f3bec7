"""An export never writes over one of its inputs (issue 39 #4): `report r.json --out r.json`
replaced the measurements with CSV, and a `bench --json` file has no journal to recover from.
Each is refused with one line before anything is written, exit 2, the input as it was."""

from __future__ import annotations

import io
import os

import pytest

from precmon.cli.commands.report_cmd import compare_files, report_file
from precmon.file_args import input_clash
from tests.hostile.files import SPEC_HEAD, variant, write_good_results
from tests.hostile.run import TINY, precmon


def call(fn, *args, **kw):
    out, err = io.StringIO(), io.StringIO()
    rc = fn(*args, stdout=out, stderr=err, **kw)
    return rc, out.getvalue(), err.getvalue()


@pytest.mark.parametrize("fmt", ["csv", "md", "json", None])
def test_report_refuses_to_write_over_its_input(tmp_path, fmt):
    src = write_good_results(tmp_path, "r.json")
    before = src.read_bytes()
    rc, _, err = call(report_file, src, fmt, src)
    assert rc == 2
    assert err.count("\n") == 1 and "is the input" in err and "r.json" in err
    assert src.read_bytes() == before


def test_report_refuses_a_link_or_another_spelling_of_its_input(tmp_path):
    src = write_good_results(tmp_path, "r.json")
    before = src.read_bytes()
    os.symlink(src, tmp_path / "link.json")
    os.link(src, tmp_path / "hard.json")
    for out in (tmp_path / "link.json", tmp_path / "hard.json", tmp_path / "." / "r.json"):
        rc, _, err = call(report_file, src, "csv", out)
        assert rc == 2 and "is the input" in err, out
    assert src.read_bytes() == before


def test_compare_refuses_to_write_over_any_of_its_inputs(tmp_path):
    a = write_good_results(tmp_path, "a.json")
    b = write_good_results(tmp_path, "b.json")
    before = b.read_bytes()
    rc, _, err = call(compare_files, [a, b], "json", b)
    assert rc == 2 and "is the input" in err and "b.json" in err
    assert b.read_bytes() == before


def test_another_out_is_still_written(tmp_path):
    src = write_good_results(tmp_path, "r.json")
    rc, out, _ = call(report_file, src, "csv", tmp_path / "r.csv")
    assert rc == 0 and (tmp_path / "r.csv").exists()


def test_input_clash_names_the_input():
    assert input_clash("/x/a.json", [("the sweep file", "/x/b.toml")]) is None
    assert (
        input_clash("/x/a.json", [("--quality-ref", "/x/../x/a.json")]) == "is the input --quality-ref /x/../x/a.json"
    )
    assert input_clash("/x/a.json", [("", "/x/a.json")]) == "is the input /x/a.json"
    assert input_clash("-", [("x", "-")]) is None  # stdout is no file


def test_bench_json_may_not_be_its_quality_ref(tmp_path):
    ref = tmp_path / "ref.json"
    ref.write_text('{"not": "read"}')
    ran = precmon("bench", "--url", "http://127.0.0.1:9", *TINY, "--quality-ref", str(ref), "--json", str(ref))
    assert ran.rc == 2 and "--json" in ran.err and "is the input --quality-ref" in ran.err, ran.err
    assert ref.read_text() == '{"not": "read"}'


def test_sweep_json_may_not_be_its_sweep_file(tmp_path):
    spec = tmp_path / "sweep.toml"
    spec.write_text(SPEC_HEAD + variant("A", "http://127.0.0.1:9"))
    before = spec.read_text()
    ran = precmon("sweep", str(spec), "--headless", "--out", str(tmp_path / "out"), "--json", str(spec))
    assert ran.rc == 2 and "is the input" in ran.err and "sweep file" in ran.err, ran.err
    assert spec.read_text() == before and not (tmp_path / "out").exists()
