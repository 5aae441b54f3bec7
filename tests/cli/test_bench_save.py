"""What `bench` does when writing --json fails after measuring: the runs are never only on a
screen. A bench is a sweep of one variant (precmon.api.measure), so its results.json and journal
are in its results folder before the --json copy is tried; a copy that fails names where they are."""

from __future__ import annotations

import json

from precmon.cli.results_out import copy_results


def test_a_copy_that_fails_after_measuring_names_where_the_results_are(tmp_path):
    results = tmp_path / "out" / "results.json"
    results.parent.mkdir()
    results.write_text(json.dumps({"schema": "precmon.results/1", "variants": [{"label": "A"}]}))
    (tmp_path / "was_a_folder").write_text("")  # replaced by a file while measuring
    gone = tmp_path / "was_a_folder" / "b.json"
    problem = copy_results(results, str(gone))
    assert problem is not None and str(gone) in problem and str(results) in problem
    assert json.loads(results.read_text())["variants"] == [{"label": "A"}]  # untouched


def test_the_copy_is_the_results_file_byte_for_byte(tmp_path):
    results = tmp_path / "results.json"
    text = '{"schema": "precmon.results/1", "variants": [], "newer_key": {"x": 1}}\n'
    results.write_text(text)
    assert copy_results(results, str(tmp_path / "copy.json")) is None
    assert (tmp_path / "copy.json").read_text() == text


def test_nothing_measured_is_said_as_such(tmp_path):
    problem = copy_results(tmp_path / "results.json", str(tmp_path / "copy.json"))
    assert problem is not None and "no variant was measured" in problem
