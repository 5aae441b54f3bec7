"""`--json` writes through a symlink (it used to replace `/dev/stdout` or a link into a shared folder
with a regular file) and `--json -` is stdout, holding only the JSON."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading

from precmon.core.schema import ResultsDoc, to_json
from precmon.measure.results import dumps_strict, output_problem, write_json_output
from tests.fakes.timed_server import Behaviour, TimedServer

DOC = ResultsDoc(created="2026-01-01T00:00:00Z")


def test_a_link_to_a_file_stays_a_link_and_its_target_is_written(tmp_path):
    target = tmp_path / "shared" / "r.json"
    target.parent.mkdir()
    target.write_text("old")
    link = tmp_path / "r.json"
    link.symlink_to(target)
    write_json_output(link, DOC)
    assert link.is_symlink() and os.readlink(link) == str(target)
    assert json.loads(target.read_text()) == to_json(DOC)
    assert sorted(p.name for p in target.parent.iterdir()) == ["r.json"]  # no temporary left


def test_a_link_to_a_pipe_is_streamed_into_it(tmp_path):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    link = tmp_path / "out.json"
    link.symlink_to(fifo)  # what /dev/stdout is when stdout is a pipe
    got: list[str] = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_text()), daemon=True)
    reader.start()
    write_json_output(link, DOC)
    reader.join(10)
    assert link.is_symlink() and json.loads(got[0]) == to_json(DOC)


def test_a_link_to_dev_null_stays_a_link(tmp_path):
    link = tmp_path / "null.json"
    link.symlink_to("/dev/null")
    write_json_output(link, DOC)
    assert link.is_symlink() and os.readlink(link) == "/dev/null"


def test_output_problems_are_found_before_measuring(tmp_path):
    assert output_problem("-") is None
    assert output_problem(tmp_path) == "is a folder"
    assert "does not exist" in (output_problem(tmp_path / "no" / "r.json") or "")
    (tmp_path / "link").symlink_to(tmp_path)
    assert output_problem(tmp_path / "link") == "is a folder"


def test_bench_json_dash_is_stdout_with_only_the_json():
    with TimedServer(Behaviour(itl_s=0.001, prefill_s_per_token=0.00001)) as srv:
        proc = subprocess.run(
            [sys.executable, "-m", "precmon.cli", "bench", "--url", srv.url, "--quick", "--no-power", "--json", "-"],
            capture_output=True,
            text=True,
            timeout=120,
        )
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)  # the table went to stderr
    assert doc["variants"][0]["status"] == "ok"
    assert not os.path.exists("-")


def test_sweep_json_dash_is_stdout_with_only_the_json(tmp_path):
    with TimedServer(Behaviour(itl_s=0.001, prefill_s_per_token=0.00001)) as srv:
        spec = tmp_path / "s.toml"
        spec.write_text(
            "[defaults]\noutput_tokens = 8\ndecode_prompt_tokens = 8\nprefill_tokens = [32]\nttft_tokens = 32\n"
            f'repeats = 1\nwarmup = 0\nidle_s = 0\n[[variant]]\nlabel = "A"\nprecision = "x"\nurl = "{srv.url}"\n'
        )
        proc = subprocess.run(
            [sys.executable, "-m", "precmon.cli", "sweep", str(spec), "--headless", "--out", str(tmp_path / "o")]
            + ["--json", "-"],
            capture_output=True,
            text=True,
            timeout=120,
        )
    assert proc.returncode == 0, proc.stderr
    assert [v["label"] for v in json.loads(proc.stdout)["variants"]] == ["A"]
    assert not os.path.exists("-")


def test_bench_json_through_a_link_to_dev_stdout_streams_into_stdout(tmp_path):
    link = tmp_path / "out.json"
    link.symlink_to("/dev/stdout")  # old code replaced the link (and, as root, /dev/stdout itself)
    with TimedServer(Behaviour(itl_s=0.001, prefill_s_per_token=0.00001)) as srv:
        proc = subprocess.run(
            [sys.executable, "-m", "precmon.cli", "bench", "--url", srv.url, "--quick", "--no-power"]
            + ["--json", str(link)],
            capture_output=True,
            text=True,
            timeout=120,
        )
    assert proc.returncode == 0, proc.stderr
    assert link.is_symlink() and os.readlink(link) == "/dev/stdout"
    # the JSON is written first (results before anything that can fail), then the table
    doc, _ = json.JSONDecoder().raw_decode(proc.stdout[proc.stdout.index('{\n  "schema"') :])
    assert doc["variants"][0]["status"] == "ok"


def test_appending_to_a_redirected_stdout_keeps_what_was_there(tmp_path):
    out = tmp_path / "log"
    out.write_text("earlier\n")
    code = (
        "from precmon.core.schema import ResultsDoc; from precmon.measure.results import write_json_output; "
        "print('table'); write_json_output('/dev/stdout', ResultsDoc())"
    )
    with open(out, "a") as f:
        subprocess.run([sys.executable, "-c", code], stdout=f, check=True, timeout=60)
    assert out.read_text() == f"earlier\ntable\n{dumps_strict(to_json(ResultsDoc()))}\n"
