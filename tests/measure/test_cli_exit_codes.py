"""Exit codes of the headless commands (docs/design.md §3): 1 when not everything measured cleanly, with the
results saved all the same, so a script can tell a clean run from a partial one."""

from __future__ import annotations

import json
import socket
import subprocess
import sys

from tests.fakes.timed_server import Behaviour, TimedServer


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_bench_partial_exits_1_and_saves_the_result(tmp_path):
    out = tmp_path / "b.json"
    # prompts over 300 tokens get HTTP 400: decode measures, the 512-token prefill and TTFT cannot
    with TimedServer(Behaviour(itl_s=0.001, prefill_s_per_token=0.00001, reject_prompt_over=300)) as srv:
        proc = subprocess.run(
            [
                sys.executable,
                "-m",
                "precmon.cli",
                "bench",
                "--url",
                srv.url,
                "--quick",
                "--no-power",
                "--json",
                str(out),
            ],
            capture_output=True,
            text=True,
            timeout=120,
        )
    assert proc.returncode == 1, proc.stderr
    assert "precmon bench: partial — " in proc.stderr and "(results saved)" in proc.stderr
    # the cause, not the first note: "2 run(s) excluded, first prefill 512: ... HTTP 400 ..."
    reason = proc.stderr.split("partial — ", 1)[1]
    assert "excluded, first prefill 512" in reason and "400" in reason, reason
    (v,) = json.loads(out.read_text())["variants"]
    assert v["status"] == "partial" and v["metrics"]["decode_tok_s"] is not None
    assert v["partial_reason"] == reason.split(" (results saved)")[0].strip()


def test_bench_ok_exits_0(tmp_path):
    with TimedServer(Behaviour(itl_s=0.001, prefill_s_per_token=0.00001)) as srv:
        proc = subprocess.run(
            [sys.executable, "-m", "precmon.cli", "bench", "--url", srv.url, "--quick", "--no-power"],
            capture_output=True,
            text=True,
            timeout=120,
        )
    assert proc.returncode == 0, proc.stderr
    assert "partial" not in proc.stderr


def test_sweep_with_a_failed_variant_exits_1_and_keeps_the_others(tmp_path):
    with TimedServer(Behaviour(itl_s=0.001, prefill_s_per_token=0.00001)) as srv:
        spec = tmp_path / "sweep.toml"
        spec.write_text(f"""
[defaults]
output_tokens = 16
decode_prompt_tokens = 16
prefill_tokens = [64]
ttft_tokens = 64
repeats = 1
warmup = 0
idle_s = 0
cooldown_s = 0

[[variant]]
label = "UP"
precision = "int4"
url = "{srv.url}"

[[variant]]
label = "GONE"
precision = "fp8"
url = "http://127.0.0.1:{_free_port()}"
""")
        proc = subprocess.run(
            [sys.executable, "-m", "precmon.cli", "sweep", str(spec), "--headless", "--out", str(tmp_path / "out")],
            capture_output=True,
            text=True,
            timeout=120,
        )
    assert proc.returncode == 1, proc.stderr
    assert "not ok: GONE failed" in proc.stderr
    by = {v["label"]: v["status"] for v in json.loads((tmp_path / "out" / "results.json").read_text())["variants"]}
    assert by == {"UP": "ok", "GONE": "failed"}


def test_bench_flags_beyond_the_sweep_files_bounds_are_usage_errors_before_any_request():
    """`--concurrency 100000000` opened streams until the timeout (hung well past 2 min on the
    fake); the flags now meet the sweep file's bounds (measure.checks.setting_problem): exit 2,
    one line naming the flag, and no request reaches the server."""
    cases = [
        (["--concurrency", "100000000"], "--concurrency: expected at most 4096 streams"),
        (["--depth", "0,99999999"], "--depth: expected at most 10000000 tokens"),
        (["--prefill-tokens", "99999999999999"], "--prefill-tokens: expected at most 10000000 tokens"),
    ]
    with TimedServer(Behaviour()) as srv:
        for flags, why in cases:
            proc = subprocess.run(
                [sys.executable, "-m", "precmon.cli", "bench", "--url", srv.url, "--no-power", *flags],
                capture_output=True,
                text=True,
                timeout=60,
            )
            assert proc.returncode == 2, proc.stderr
            assert len(proc.stderr.strip().splitlines()) == 1, proc.stderr
            assert why in proc.stderr, proc.stderr
        assert srv.behaviour.requests == []
