"""Two Ctrl-C a few ms apart (issue 11 #17): the second must not interrupt the saving that the
first started. Exit 130, and the runs measured so far are in --json."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from tests.hostile.servers import SCRIPTS, HostileServer


@pytest.mark.parametrize("gap_s", [0.001, 0.005])
def test_a_second_sigint_while_saving_loses_nothing(tmp_path, gap_s):
    out = tmp_path / "b.json"
    with HostileServer(SCRIPTS["slow"]) as srv:  # 16 tokens x 50 ms: 0.8 s per decode request
        proc = subprocess.Popen(
            [sys.executable, "-m", "precmon.cli", "bench", "--url", srv.url, "--server", "llamacpp",
             "--output-tokens", "16", "--decode-prompt-tokens", "8", "--repeats", "5", "--warmup", "0",
             "--idle-s", "0", "--no-power", "--timeout", "5", "--json", str(out)],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=dict(os.environ, COLUMNS="200"),
        )  # fmt: skip
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and srv.completions < 2:  # the first decode run has landed
            time.sleep(0.01)
        proc.send_signal(signal.SIGINT)
        time.sleep(gap_s)
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=30)
    assert proc.returncode == 130, err
    assert "Traceback" not in err
    (v,) = json.loads(out.read_text())["variants"]
    assert any(r["phase"] == "decode" and r["ok"] for r in v["runs"]), v["runs"]
    assert any("interrupted" in e for e in v["errors"])
