"""What `bench` does when writing --json fails after measuring: the runs are never only on a
screen (issue 11 #2: "any exception after measuring still leaves the JSON on disk")."""

from __future__ import annotations

import json

from precmon.cli.commands import bench_cmd


def test_a_value_json_cannot_hold_is_written_as_text(tmp_path):
    path = tmp_path / "b.json"
    doc = {"variants": [{"extra": {"odd": object(), "nan": float("nan")}, "decode_tok_s": 10.0}]}
    saved, problem = bench_cmd._save(str(path), doc)
    assert (saved, problem) == (str(path), None)
    v = json.loads(path.read_text())["variants"][0]
    assert v["decode_tok_s"] == 10.0 and v["extra"]["odd"].startswith("<object")
    assert v["extra"]["nan"] is None or v["extra"]["nan"] != v["extra"]["nan"]


def test_a_write_failing_after_measuring_sends_the_results_to_a_named_fallback(tmp_path, monkeypatch):
    monkeypatch.setattr(bench_cmd.tempfile, "gettempdir", lambda: str(tmp_path))
    (tmp_path / "was_a_folder").write_text("")  # replaced by a file while measuring
    gone = tmp_path / "was_a_folder" / "b.json"
    saved, problem = bench_cmd._save(str(gone), {"variants": [{"label": "A"}]})
    assert saved is not None and saved.startswith(str(tmp_path / "precmon-bench-"))
    assert problem is not None and str(gone) in problem and saved in problem
    assert json.loads(open(saved).read())["variants"] == [{"label": "A"}]
