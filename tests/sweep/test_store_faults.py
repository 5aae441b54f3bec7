"""`--out` faults never end a sweep or lose a run: checked up front (exit 2 naming the path); on a
write failure mid-sweep (disk full, read-only, the folder deleted) measuring goes on into a rescue
folder, stderr says where, exit 1; `--resume` recovers what only the journal holds; a torn last
journal line does not damage the next record."""

from __future__ import annotations

import errno
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from precmon.core.schema import Host, Run, VariantResult, to_json
from precmon.measure.results import results_document, write_json_atomic
from precmon.sweep import store as store_mod
from precmon.sweep.events import Log
from precmon.sweep.runner import SweepRunner
from precmon.sweep.spec import parse_spec
from precmon.sweep.store import ResultStore, out_dir_problem, read_journal
from tests.fakes.timed_server import Behaviour, TimedServer

PLAN = """
[defaults]
output_tokens = 8
decode_prompt_tokens = 8
prefill_tokens = [32]
ttft_tokens = 32
repeats = 1
warmup = 0
idle_s = 0
cooldown_s = 0
"""


def _spec_text(*urls: str) -> str:
    return PLAN + "".join(
        f'\n[[variant]]\nlabel = "V{i}"\nprecision = "p{i}"\nurl = "{u}"\n' for i, u in enumerate(urls)
    )


def test_out_under_a_file_is_refused_up_front(tmp_path):
    (tmp_path / "f").write_text("x")
    assert f"cannot create it: {tmp_path / 'f'} is not a folder" == out_dir_problem(tmp_path / "f" / "sub")
    assert "not a folder" in (out_dir_problem(tmp_path / "f") or "")
    assert out_dir_problem(tmp_path / "new" / "deeper") is None and (tmp_path / "new" / "deeper").is_dir()
    assert list((tmp_path / "new" / "deeper").iterdir()) == []  # the probe is gone
    spec = tmp_path / "s.toml"
    spec.write_text(_spec_text("http://127.0.0.1:1"))
    proc = subprocess.run(
        [sys.executable, "-m", "precmon.cli", "sweep", str(spec), "--headless", "--out", str(tmp_path / "f" / "o")],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 2
    (line,) = proc.stderr.strip().splitlines()
    assert str(tmp_path / "f" / "o") in line and "Traceback" not in proc.stderr


def test_a_failed_write_leaves_no_temporary_and_the_old_file_whole(tmp_path, monkeypatch):
    path = tmp_path / "results.json"
    write_json_atomic(path, {"a": 1})

    def full(fd):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "fsync", full)
    with pytest.raises(OSError):
        write_json_atomic(path, {"a": 2})
    assert [p.name for p in tmp_path.iterdir()] == ["results.json"]
    assert json.loads(path.read_text()) == {"a": 1}


@pytest.mark.parametrize("code", [errno.ENOSPC, errno.EROFS])
def test_disk_full_or_read_only_mid_sweep_goes_on_into_the_rescue_folder(tmp_path, monkeypatch, code):
    monkeypatch.setenv("PRECMON_CACHE", str(tmp_path / "cache"))
    out = tmp_path / "out"
    real_append, real_write = ResultStore._append_line, store_mod.write_json_atomic
    calls = {"n": 0}

    def failing_append(self, path, line, check_tail=False):
        calls["n"] += 1
        if Path(path).parent == out and calls["n"] > 2:  # the first runs land, then the disk fails
            raise OSError(code, os.strerror(code))
        return real_append(self, path, line, check_tail)

    def failing_write(path, doc, make_parents=True):
        if Path(path).parent == out and calls["n"] > 2:
            raise OSError(code, os.strerror(code))
        return real_write(path, doc, make_parents)

    monkeypatch.setattr(ResultStore, "_append_line", failing_append)
    monkeypatch.setattr(store_mod, "write_json_atomic", failing_write)
    logs: list[str] = []
    with TimedServer(Behaviour(itl_s=0.001)) as a, TimedServer(Behaviour(itl_s=0.001)) as b:
        runner = SweepRunner(
            parse_spec(_spec_text(a.url, b.url)),
            out,
            on_event=lambda ev: logs.append(ev.text) if isinstance(ev, Log) else None,
        )
        path = runner.run()
    rescue = runner.store.rescued_to
    assert rescue is not None and rescue.is_relative_to(tmp_path / "cache" / "rescue")
    assert path == rescue / "results.json"
    doc = json.loads(path.read_text())
    assert [v["status"] for v in doc["variants"]] == ["ok", "ok"]  # nothing after the fault was skipped
    rescued_runs = [r for r in read_journal(rescue / "journal.jsonl").records if r["type"] == "run"]
    assert len(rescued_runs) == sum(len(v["runs"]) for v in doc["variants"])  # the whole session's journal
    assert any(str(rescue) in line and "measuring on" in line for line in logs)
    assert not [p for p in out.iterdir() if p.name.endswith(".tmp")]


def test_folder_deleted_mid_sweep_exits_1_and_says_where_the_results_are(tmp_path):
    out = tmp_path / "out"

    def delete_out(final_event, truth):
        shutil.rmtree(out, ignore_errors=True)

    with (
        TimedServer(Behaviour(itl_s=0.001)) as a,
        TimedServer(Behaviour(itl_s=0.001, final_extra=delete_out)) as b,
    ):
        spec = tmp_path / "s.toml"
        spec.write_text(_spec_text(a.url, b.url))
        proc = subprocess.run(
            [sys.executable, "-m", "precmon.cli", "sweep", str(spec), "--headless", "--out", str(out)],
            capture_output=True,
            text=True,
            timeout=120,
            env={**os.environ, "PRECMON_CACHE": str(tmp_path / "cache")},
        )
    assert proc.returncode == 1, proc.stderr
    assert "Traceback" not in proc.stderr
    (rescue,) = (tmp_path / "cache" / "rescue").iterdir()
    assert str(rescue) in proc.stderr
    doc = json.loads((rescue / "results.json").read_text())
    assert {v["label"]: v["status"] for v in doc["variants"]} == {"V0": "ok", "V1": "ok"}


def _variant(label: str, status: str = "ok", precision: str = "p") -> VariantResult:
    return VariantResult(
        label=label,
        precision=precision,
        model=None,
        status=status,
        runs=[Run(phase="decode", prompt_tokens=9, output_tokens=8, decode_tok_s=100.0)],
    )


def test_resume_recovers_variants_and_runs_only_in_the_journal(tmp_path):
    old = ResultStore(tmp_path, {}, Host())
    old.put_variant(_variant("A"))  # in results.json and the journal
    old._append({"type": "variant", "at": "t", "variant": to_json(_variant("B"))})  # crash before results.json
    old.add_run("C", Run(phase="decode", prompt_tokens=9, output_tokens=8, decode_tok_s=90.0))  # crash mid-variant
    assert [v["label"] for v in json.loads((tmp_path / "results.json").read_text())["variants"]] == ["A"]

    notes: list[str] = []
    back = {v.label: v for v in ResultStore(tmp_path, {}, Host(), on_note=notes.append).load_existing()}
    assert back["A"].status == "ok" and back["B"].status == "ok"
    assert back["C"].status == "partial" and back["C"].runs[0].decode_tok_s == 90.0
    assert any("B: recovered from journal.jsonl" in n for n in notes)
    assert any("C: 1 run(s)" in n for n in notes)


def test_a_torn_last_journal_line_is_reported_and_the_next_record_is_whole(tmp_path):
    store = ResultStore(tmp_path, {}, Host())
    store.add_run("A", Run(phase="decode", decode_tok_s=1.0))
    with open(tmp_path / "journal.jsonl", "a") as f:
        f.write('{"type": "run", "variant": "A", "ru')  # a write cut short by a crash
    notes: list[str] = []
    again = ResultStore(tmp_path, {}, Host(), on_note=notes.append)
    again.load_existing()
    again.add_run("A", Run(phase="decode", decode_tok_s=2.0))
    jr = read_journal(tmp_path / "journal.jsonl")
    assert [r["run"]["decode_tok_s"] for r in jr.records] == [1.0, 2.0]
    assert len(jr.problems) == 1 and "journal.jsonl:2" in jr.problems[0]
    assert any("not a complete record" in n for n in notes) and any("torn" in n for n in notes)


def test_results_json_older_than_the_journal_is_not_measured_again(tmp_path):
    store = ResultStore(tmp_path, {}, Host())
    write_json_atomic(tmp_path / "results.json", results_document([], {}, Host()))
    # the sweep file's V0 (its precision too: a resume refuses a changed plan, sweep/resume.py)
    store._append({"type": "variant", "at": "t", "variant": to_json(_variant("V0", precision="p0"))})
    with TimedServer(Behaviour(itl_s=0.001)) as srv:
        runner = SweepRunner(parse_spec(_spec_text(srv.url)), tmp_path, resume=True)
        runner.run()
        assert srv.behaviour.requests == []  # V0 came back from the journal: nothing to measure
    assert [v["label"] for v in json.loads((tmp_path / "results.json").read_text())["variants"]] == ["V0"]


def test_a_journal_deleted_and_its_folder_made_again_is_a_fault_too(tmp_path, monkeypatch):
    monkeypatch.setenv("PRECMON_CACHE", str(tmp_path / "cache"))
    out = tmp_path / "out"
    store = ResultStore(out, {}, Host())
    store.add_run("A", Run(phase="decode", decode_tok_s=1.0))
    shutil.rmtree(out)
    (out / "logs").mkdir(parents=True)  # what a launched server's log file does
    store.add_run("A", Run(phase="decode", decode_tok_s=2.0))
    assert store.rescued_to is not None
    rescued = read_journal(store.rescued_to / "journal.jsonl").records
    assert [r["run"]["decode_tok_s"] for r in rescued] == [1.0, 2.0]  # the earlier line too
