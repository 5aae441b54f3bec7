"""`/power`: what another machine's `--power-from` reads at its window edges. The power families
and the node's identity only (no results folder, no server polls in its answer), and with
`?fresh=1` the sources read first, so the counters are that moment's, not the last tick's."""

from __future__ import annotations

import time
import urllib.request

from precmon.exporter.serve import Exporter
from precmon.power.remote import parse
from precmon.power.sampler import PowerSampler
from tests.exporter.conftest import RESULTS
from tests.exporter.test_collectors import CountingSource


def _get(url: str) -> str:
    with urllib.request.urlopen(url, timeout=5) as r:
        return r.read().decode()


def test_power_path_serves_power_and_reads_fresh_on_asking(tmp_path) -> None:
    (tmp_path / "r").mkdir()
    (tmp_path / "r" / "results.json").write_text((RESULTS / "cpu_tiny.json").read_text())
    src = CountingSource()
    sampler = PowerSampler(sources=[src], rate_hz=0.2, extras_hz=0.2).start()  # a tick every 5 s
    exp = Exporter(lambda: sampler, results=tmp_path / "r", host="node-x")
    fresh = []
    exp.on_fresh = lambda: fresh.append(time.monotonic())
    port = exp.serve("127.0.0.1", 0)
    try:
        base = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 5
        while src.reads < 1 and time.monotonic() < deadline:
            time.sleep(0.01)
        everything = _get(base + "/metrics")
        assert "precmon_result_decode_tokens_per_second" in everything
        power = _get(base + "/power")
        assert "precmon_result_" not in power and 'precmon_node_info{host="node-x"' in power
        assert src.reads == 1 and not fresh  # a plain read asks no source
        found = parse(_get(base + "/power?fresh=1"))
        assert src.reads == 2 and len(fresh) == 1  # the source was read for this answer
        assert found.name == "node-x" and found.readings["nvml:0"].watts == 250.0
    finally:
        exp.stop()
        sampler.stop()
