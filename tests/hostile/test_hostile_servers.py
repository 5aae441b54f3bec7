"""Every CLI command that talks to a server, against hostile local ones (issue 11, "make the class
hard to reintroduce"; the file-reading commands are in test_hostile_files.py). Each case asserts
what docs/design.md §3 promises: no traceback, the documented
exit code (0 ok, 1 measurement failed, 2 usage or input error, 130 interrupted), no raw terminal
escape and no credential in the output, and every run measured before a fault on disk afterwards.

The whole suite is bounded: short --timeout, a deadline on every subprocess.
"""

from __future__ import annotations

import json
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.hostile.files import SPEC_HEAD, variant
from tests.hostile.run import TINY, Ran, assert_clean, precmon
from tests.hostile.servers import SCRIPTS, SECRET, HostileServer, Served, SilentServer


def bench(url: str, *extra: str, timeout_s: float = 20.0, json_path: Path | None = None) -> Ran:
    args = ["bench", "--url", url, "--api-key-env", "HOSTILE_KEY", *TINY, *extra]
    return precmon(*args, *(["--json", str(json_path)] if json_path else []), timeout_s=timeout_s)


def decode_runs_ok(path: Path) -> int:
    (v,) = json.loads(path.read_text())["variants"]
    return sum(1 for r in v["runs"] if r["phase"] == "decode" and r["ok"])


# ---- bench ------------------------------------------------------------------------------------
BENCH_CASES = [
    pytest.param("good", 0, 1, id="good"),
    pytest.param("markup_500", 1, 0, id="markup-and-escapes-in-500-body"),
    pytest.param("echo_auth", 1, 0, id="proxy-echoes-authorization"),
    pytest.param("stall", 1, 0, id="stalled-stream"),
    pytest.param("close_mid_stream", 1, 0, id="closed-mid-stream"),
    pytest.param("dies_after_decode", 1, 1, id="dies-after-decode"),
    pytest.param("unhealthy", 1, None, id="unhealthy"),
    pytest.param("trickle", 1, 0, id="one-byte-per-second"),
]


@pytest.mark.parametrize(("script", "code", "decode_kept"), BENCH_CASES)
def test_bench(tmp_path, script, code, decode_kept):
    out = tmp_path / "b.json"
    with HostileServer(SCRIPTS[script]) as srv:
        url = srv.url.replace("http://", "http://user:pa55word@")
        ran = bench(url, "--server", "llamacpp", json_path=out, timeout_s=8 if script == "trickle" else 20)
    assert_clean(ran, code)
    if decode_kept is None:  # nothing measured: nothing to keep
        return
    assert decode_runs_ok(out) >= decode_kept  # measured before the fault, on disk after it
    stored = out.read_text()
    assert SECRET not in stored and "pa55word" not in stored


def test_bench_odd_but_valid_json(tmp_path):
    out = tmp_path / "b.json"
    with HostileServer(SCRIPTS["odd_json"]) as srv:
        ran = bench(srv.url, json_path=out)  # auto detection reads the odd /props too
    assert_clean(ran, (0, 1))
    (v,) = json.loads(out.read_text())["variants"]
    assert not any("unexpected error" in e for e in v["errors"]), v["errors"]


def test_bench_server_that_never_answers():
    with SilentServer() as srv:
        started = time.monotonic()
        ran = bench(srv.url, "--timeout", "1", timeout_s=12)  # 6 probes + a request, 1 s each at most
    assert_clean(ran, 1)
    assert time.monotonic() - started < 11


@pytest.mark.parametrize(
    ("argv", "flag"),
    [
        (["--url", "http://[bad"], "--url"),
        (["--url", "http://127.0.0.1:9", "--timeout", "nan"], "--timeout"),
        # 1e308 s passed, then every request ended "unexpected error: OverflowError: timestamp out of range"
        (["--url", "http://127.0.0.1:9", "--timeout", "1e308"], "--timeout"),
        (["--url", "http://127.0.0.1:9", "--idle-s", "1e308"], "--idle-s"),
        # an OpenAI base_url: "the server answers but is not healthy (still loading a model?)", exit 1
        (["--url", "http://127.0.0.1:9/v1"], "without /v1"),
        (["--url", "http://127.0.0.1:9/proxy/v1/"], "without /v1"),
    ],
)
def test_bench_usage_errors(argv, flag):
    ran = precmon("bench", *argv)
    assert_clean(ran, 2)
    assert flag in ran.err


@pytest.mark.parametrize("kind", ["llamacpp", "ollama", "vllm"])
def test_bench_against_a_server_that_is_down_says_so(kind):
    """With --server given, a port nobody listens on said "the server answers but is not healthy
    (still loading a model?)": health() took connection refused for a 503, and the user waited."""
    with socket.socket() as free:
        free.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{free.getsockname()[1]}"  # bound, never listening: refused
        ran = bench(url, "--server", kind)
    assert_clean(ran, 1)
    assert "cannot connect" in ran.err and "answers" not in ran.err, ran.err


def test_the_command_line_bounds_seconds_as_the_sweep_file_does():
    from precmon.cli import parser
    from precmon.measure import checks

    assert parser.MAX_SECONDS == checks.MAX_SECONDS


def test_bench_interrupted_keeps_the_runs(tmp_path):
    out = tmp_path / "b.json"
    with HostileServer(SCRIPTS["slow"]) as srv:
        proc = subprocess.Popen(
            [sys.executable, "-m", "precmon.cli", "bench", "--url", srv.url, "--server", "llamacpp", *TINY,
             "--output-tokens", "16", "--repeats", "4", "--timeout", "5", "--json", str(out)],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and srv.completions < 2:
            time.sleep(0.01)
        proc.send_signal(signal.SIGTERM)  # a `kill`: the same promise as Ctrl-C
        out_text, err = proc.communicate(timeout=20)
    assert_clean(Ran(proc.returncode, out_text, err), 130)
    assert decode_runs_ok(out) >= 1


# ---- sweep --------------------------------------------------------------------------------------
HOSTILE_VARIANTS = ["good", "dies_after_decode", "markup_500", "echo_auth", "close_mid_stream", "stall"]


def test_sweep_headless_against_every_fault(tmp_path):
    with Served(HOSTILE_VARIANTS) as served:
        body = SPEC_HEAD + 'api_key_env = "HOSTILE_KEY"\n'
        for name, srv in served.servers.items():
            body += variant(name, srv.url.replace("http://", "http://user:pa55word@"))
        spec = tmp_path / "sweep.toml"
        spec.write_text(body)
        out, copy = tmp_path / "out", tmp_path / "copy.json"
        ran = precmon("sweep", str(spec), "--headless", "--out", str(out), "--json", str(copy), timeout_s=60)
    assert_clean(ran, 1)
    doc = json.loads(copy.read_text())
    by = {v["label"]: v for v in doc["variants"]}
    assert list(by) == HOSTILE_VARIANTS
    assert by["good"]["status"] == "ok"
    assert any(r["phase"] == "decode" and r["ok"] for r in by["dies_after_decode"]["runs"])
    journal = (out / "journal.jsonl").read_text()
    assert journal.count('"type": "variant"') == len(HOSTILE_VARIANTS)
    for text in (journal, (out / "results.json").read_text(), copy.read_text()):
        assert SECRET not in text and "pa55word" not in text


def test_sweep_interrupted_keeps_the_variants_done(tmp_path):
    with Served(["good", "slow"]) as served:
        spec = tmp_path / "sweep.toml"
        spec.write_text(
            SPEC_HEAD.replace("repeats = 1", "repeats = 5").replace("output_tokens = 4", "output_tokens = 16")
            + variant("good", served.servers["good"].url)
            + variant("slow", served.servers["slow"].url)
        )
        out, copy = tmp_path / "out", tmp_path / "copy.json"
        proc = subprocess.Popen(
            [sys.executable, "-m", "precmon.cli", "sweep", str(spec), "--out", str(out), "--json", str(copy)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )  # fmt: skip  (no --headless: no TTY runs it headless, --json still honoured)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and served.servers["slow"].completions < 2:
            time.sleep(0.01)
        proc.send_signal(signal.SIGINT)
        out_text, err = proc.communicate(timeout=30)
    assert_clean(Ran(proc.returncode, out_text, err), 130)
    by = {v["label"]: v for v in json.loads(copy.read_text())["variants"]}
    assert by["good"]["status"] == "ok"
    assert any(r["phase"] == "decode" and r["ok"] for r in by["slow"]["runs"])


def test_sweep_resume_after_failed_requests(tmp_path):
    with Served(["good", "markup_500"]) as served:
        spec = tmp_path / "sweep.toml"
        spec.write_text(SPEC_HEAD + "".join(variant(n, s.url) for n, s in served.servers.items()))
        out = tmp_path / "out"
        first = precmon("sweep", str(spec), "--headless", "--out", str(out))
        assert_clean(first, 1)
        again = precmon("sweep", str(spec), "--headless", "--resume", "--out", str(out))
    assert_clean(again, 1)  # measured again, failed again: not "cannot be continued"
    assert "cannot be continued" not in again.err


def test_resume_after_a_failing_variant_is_taken_out_of_the_sweep_file(tmp_path):
    """The user drops the variant that keeps failing and resumes: it exited 1 "not ok: bad failed
    (precmon sweep --resume measures them again)" on every --resume, though nothing planned it."""
    with Served(["good", "markup_500"]) as served:
        spec = tmp_path / "sweep.toml"
        spec.write_text(
            SPEC_HEAD + variant("good", served.servers["good"].url) + variant("bad", served.servers["markup_500"].url)
        )
        out = tmp_path / "out"
        assert_clean(precmon("sweep", str(spec), "--headless", "--out", str(out)), 1)
        spec.write_text(SPEC_HEAD + variant("good", served.servers["good"].url))
        again = precmon("sweep", str(spec), "--headless", "--resume", "--out", str(out))
    assert_clean(again, 0)
    assert "bad" in again.err and "not in" in again.err  # said, and kept as it was
    by = {v["label"]: v["status"] for v in json.loads((out / "results.json").read_text())["variants"]}
    assert by == {"good": "ok", "bad": "failed"}


# ---- doctor, watch, --version --------------------------------------------------------------------
def test_doctor_json_with_hostile_and_credentialed_urls():
    with Served(["echo_auth", "odd_json"]) as served:
        urls = [s.url.replace("http://", "http://user:pa55word@") for s in served.servers.values()]
        ran = precmon("doctor", "--json", *(x for u in urls for x in ("--url", u)), timeout_s=30)
    assert_clean(ran, 0)
    doc = json.loads(ran.out)
    assert set(doc) == {"power_sources", "servers", "preflight"}  # `spbm` only on a Spark with its driver
    assert "pa55word" not in ran.out


def test_doctor_table():
    with HostileServer(SCRIPTS["markup_500"]) as srv:
        ran = precmon("doctor", "--url", srv.url, timeout_s=30)
    assert_clean(ran, 0)
    assert "LLM servers" in ran.out


def test_doctor_bad_url_is_a_usage_error():
    assert_clean(precmon("doctor", "--url", "http://[bad"), 2)


@pytest.mark.parametrize("argv", [["--version"], ["--help"], ["watch", "--help"], ["bench", "--help"]])
def test_help_and_version(argv):
    ran = precmon(*argv)
    assert_clean(ran, 0)
    assert "precmon" in ran.out
