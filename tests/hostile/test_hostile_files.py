"""Every CLI command that reads a file, fed bad ones (issue 11 #11, #12, #6): `report` in each
format, `compare`, `sweep --check`, `sweep --resume`. Same promises and markers as
test_hostile_servers.py: no traceback, exit 2 with one line naming the file (and field), odd text
shown as typed."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tests.hostile.files import (
    BAD_RESULTS,
    BAD_SPECS,
    GOOD_RESULTS,
    ODD_RESULTS,
    ODD_SPEC,
    SPEC_HEAD,
    variant,
    write_good_results,
)
from tests.hostile.run import Ran, assert_clean, precmon


@pytest.mark.parametrize(
    "name",
    ["folder", "non_utf8", "deep_nesting", "variants_an_object", "dangling_link", "negative_prefill", "huge_value"],
)
def test_sweep_resume_from_a_bad_results_file(tmp_path, name):
    out = tmp_path / "out"
    out.mkdir()
    os.rename(BAD_RESULTS[name](out), out / "results.json")
    spec = tmp_path / "sweep.toml"
    spec.write_text(SPEC_HEAD + variant("A", "http://127.0.0.1:9"))
    ran = precmon("sweep", str(spec), "--headless", "--resume", "--out", str(out))
    assert_clean(ran, 2)
    assert f"{out / 'results.json'} cannot be continued" in ran.err and len(ran.err.strip().splitlines()) == 1


@pytest.mark.parametrize("name", list(BAD_SPECS))
def test_sweep_check_bad_spec(tmp_path, name):
    make, names = BAD_SPECS[name]
    path = make(tmp_path)
    ran = precmon("sweep", str(path), "--check")
    assert_clean(ran, 2)
    assert names in ran.err and len(ran.err.strip().splitlines()) == 1, ran.err


def test_sweep_check_shows_odd_labels_as_typed(tmp_path):
    spec = tmp_path / "sweep.toml"
    spec.write_text(ODD_SPEC)
    ran = precmon("sweep", str(spec), "--check")
    assert_clean(ran, 0)
    assert "F16 [/]" in ran.out and "Q4_K_M [imatrix]" in ran.out


# ---- report and compare -------------------------------------------------------------------------
@pytest.mark.parametrize("fmt", ["md", "csv", "json", "html", "table"])
def test_report_every_format(tmp_path, fmt):
    ran = precmon("report", str(write_good_results(tmp_path)), "--format", fmt)
    assert_clean(ran, 0)
    assert "Q4_K_M" in ran.out


@pytest.mark.parametrize("name", list(BAD_RESULTS))
def test_report_bad_file(tmp_path, name):
    """Every bad results file, impossible values (NaN, a negative prefill, 1e308) included, is an
    input error: exit 2, one line naming the file (report/load.py)."""
    path = BAD_RESULTS[name](tmp_path)
    ran = precmon("report", str(path))
    assert_clean(ran, 2)
    assert str(path) in ran.err and len(ran.err.strip().splitlines()) == 1, ran.err


@pytest.mark.parametrize(
    "name",
    [
        "not_json",
        "dangling_link",
        "folder",
        "settings_a_string",
        "deep_nesting",
    ],
)
def test_compare_with_a_bad_file(tmp_path, name):
    path = BAD_RESULTS[name](tmp_path)
    ran = precmon("compare", str(write_good_results(tmp_path)), str(path))
    assert_clean(ran, 2)
    assert str(path) in ran.err


@pytest.mark.parametrize("name", list(ODD_RESULTS))
@pytest.mark.parametrize("command", ["report", "compare"])
def test_odd_text_in_a_results_file_is_shown_as_typed(tmp_path, name, command):
    path = ODD_RESULTS[name](tmp_path)
    ran = precmon(command, str(path))
    assert_clean(ran, 0)
    assert "[/]" in ran.out


@pytest.mark.parametrize("fmt", [[], ["--format", "md"]])
@pytest.mark.parametrize("command", ["report", "compare"])
def test_report_to_a_full_stdout(tmp_path, command, fmt):
    """`precmon report r.json > /dev/full` ended in "internal error (please report it): OSError:
    [Errno 28] No space left on device"; it is one line naming stdout, exit 2 (as --out)."""
    results = tmp_path / "r.json"
    results.write_text(json.dumps(GOOD_RESULTS))
    with open("/dev/full", "w") as full:
        proc = subprocess.run(
            [sys.executable, "-m", "precmon.cli", command, str(results), *fmt],
            stdout=full, stderr=subprocess.PIPE, text=True, timeout=60,
        )  # fmt: skip
    assert_clean(Ran(proc.returncode, "", proc.stderr), 2)
    assert proc.stderr == f"precmon {command}: cannot write stdout: No space left on device\n"


@pytest.mark.parametrize("argv", [["doctor"], ["doctor", "--json"], ["sweep", "{spec}", "--check"]])
def test_any_command_to_a_full_stdout_is_one_line(tmp_path, argv):
    """Every command's output to `> /dev/full`: one line and exit 2, never "internal error"."""
    spec = tmp_path / "s.toml"
    spec.write_text(SPEC_HEAD + variant("A", "http://127.0.0.1:9"))
    with open("/dev/full", "w") as full:
        proc = subprocess.run(
            [sys.executable, "-m", "precmon.cli", *(a.format(spec=spec) for a in argv)],
            stdout=full, stderr=subprocess.PIPE, text=True, timeout=60,
        )  # fmt: skip
    assert_clean(Ran(proc.returncode, "", proc.stderr), 2)
    assert proc.stderr == "precmon: cannot write the output: No space left on device\n"
