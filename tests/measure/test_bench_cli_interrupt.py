"""`precmon bench` interrupted with Ctrl-C: exit 130, and what was measured is in the JSON."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time

from tests.fakes.timed_server import Behaviour, TimedServer


def test_ctrl_c_saves_the_runs_so_far(tmp_path):
    out = tmp_path / "b.json"
    with TimedServer(Behaviour(itl_s=0.02)) as srv:  # 64 tokens ≈ 1.3 s per decode request
        proc = subprocess.Popen(
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
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and len(srv.behaviour.log) < 3:  # warm-up + 2 decode runs done
            time.sleep(0.05)
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=30)
    assert proc.returncode == 130, err
    doc = json.loads(out.read_text())
    (v,) = doc["variants"]
    assert any("interrupted" in e for e in v["errors"])
    assert sum(1 for r in v["runs"] if r["phase"] == "decode" and r["ok"]) >= 1
    assert v["metrics"]["decode_tok_s"] is not None
    assert "Traceback" not in err
