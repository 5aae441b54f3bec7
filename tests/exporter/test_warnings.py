"""Bad input is one line and the exporter keeps serving; a listen address off loopback warns."""

from __future__ import annotations

import shutil
import socket
import subprocess
import sys

import pytest

from tests.exporter.conftest import REPO, RESULTS, free_port, get, wait_for


def test_bad_results_file_is_one_warning_and_the_rest_is_served(tmp_path, exporter_proc) -> None:
    results = tmp_path / "results"
    (results / "old").mkdir(parents=True)
    shutil.copy(RESULTS / "cpu_tiny.json", results / "old" / "results.json")
    (results / "old" / "quality-ref.json").write_text('{"schema": "precmon.quality_ref/1"}')  # a sweep's
    (results / "launched").mkdir()
    (results / "launched" / "F16.json").write_text('{"pid": 1}')  # files beside results: no warning
    (results / "broken.json").write_text('{"schema": "precmon.results/1", "variants": [{"label": 3}')
    (results / "wrong.json").write_text(
        '{"schema": "precmon.results/1", "variants": [{"label": "x", "metrics": {"decode_tok_s": "fast"}}]}'
    )
    port = free_port()
    exp = exporter_proc(["--listen", f"127.0.0.1:{port}", "--results", str(results), "--interval-s", "0.5"])
    url = f"http://127.0.0.1:{port}/metrics"
    wait_for(url, "the exporter")
    for _ in range(3):  # every scrape reads the folder: the warnings must not repeat
        text = get(url)
    assert 'precmon_result_decode_tokens_per_second{host="ci-runner"' in text
    code, err = exp.stop()
    assert code == 130 and "Traceback" not in err, err
    lines = [ln for ln in err.splitlines() if ln.startswith("precmon exporter: skipping")]
    assert len(lines) == 2, err
    assert any("broken.json" in ln and "JSON" in ln for ln in lines), lines
    assert any("wrong.json" in ln and "decode_tok_s" in ln for ln in lines), lines


def test_non_loopback_listen_warns_and_loopback_does_not(exporter_proc) -> None:
    port = free_port()
    exp = exporter_proc(["--listen", f"0.0.0.0:{port}"])
    wait_for(f"http://127.0.0.1:{port}/metrics", "the exporter")
    _, err = exp.stop()
    (warning,) = [ln for ln in err.splitlines() if "warning" in ln]
    assert f"0.0.0.0:{port}" in warning and "no authentication" in warning
    port = free_port()
    exp = exporter_proc(["--listen", f"127.0.0.1:{port}"])
    wait_for(f"http://127.0.0.1:{port}/metrics", "the exporter")
    code, err = exp.stop()
    assert code == 130 and "warning" not in err, err


def _usage_error(*args: str) -> str:
    p = subprocess.run(
        [sys.executable, "-m", "precmon", "exporter", *args],
        env={"PYTHONPATH": str(REPO / "src"), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert p.returncode == 2, p.stderr
    assert len(p.stderr.strip().splitlines()) == 1, p.stderr
    return p.stderr


def test_bad_listen_is_a_usage_error() -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        taken = f"127.0.0.1:{busy.getsockname()[1]}"
        cases = [("9464", "expected HOST:PORT"), ("127.0.0.1:99999", "port 0-65535"), ("::1:9464", "brackets")]
        for listen, why in [*cases, (taken, f"--listen {taken}: cannot listen there")]:
            assert why in _usage_error("--listen", listen)


def test_missing_folders_are_usage_errors(tmp_path) -> None:
    assert "--results" in _usage_error("--results", str(tmp_path / "nope"))
    assert "--textfile" in _usage_error("--textfile", str(tmp_path / "nope" / "precmon.prom"))


def test_help_teaches_the_scrape_config(capsys) -> None:
    from precmon.cli import main

    with pytest.raises(SystemExit) as exc:
        main(["exporter", "--help"])
    assert exc.value.code == 0
    out = capsys.readouterr().out
    for needle in ("scrape_configs:", "job_name: precmon", ':9464"', "--textfile", "no authentication"):
        assert needle in out, needle


def test_textfile_that_cannot_be_written_is_a_usage_error(tmp_path) -> None:
    """A folder given as the file, or a folder nobody may write (/sys, even for root), is exit 2
    with one line at start, not a warning repeated every interval forever."""
    assert "--textfile" in _usage_error("--textfile", str(tmp_path), "--interval-s", "0.5")
    assert "cannot write there" in _usage_error("--textfile", "/sys/precmon.prom", "--interval-s", "0.5")


def test_an_interval_below_a_tenth_of_a_second_is_a_usage_error() -> None:
    """--interval-s 1e-9 was accepted and spun a core, polling every server and fsyncing the
    textfile a billion times a second."""
    p = subprocess.run(
        [sys.executable, "-m", "precmon", "exporter", "--interval-s", "1e-9", "--listen", "127.0.0.1:0"],
        env={"PYTHONPATH": str(REPO / "src"), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=10,
    )
    assert p.returncode == 2 and "argument --interval-s: expected at least 0.1 seconds" in p.stderr, p.stderr
