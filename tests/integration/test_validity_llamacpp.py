"""Disturbance detection against a real llama-server (docs/design.md §4 "Trust").

Three benches of the same plan on one single-model server: quiet, with two CPU burners running
(`host-busy:`), and behind a proxy that releases the stream in bursts (`client-server-gap:`,
naming the server's figure as the one to trust).
"""

from __future__ import annotations

import subprocess
import sys
import time

import psutil
import pytest

from precmon.measure.bench import Bench, BenchSettings
from precmon.measure.trust.validity import OTHER_CORES_MAX, STEAL_CORES_MAX
from precmon.power.cpu import BUSY_FIELDS
from precmon.servers.detect import make_server
from tests.fakes.burst_proxy import BurstProxy

pytestmark = pytest.mark.integration

SETTINGS = BenchSettings(
    output_tokens=128,
    decode_prompt_tokens=32,
    prefill_tokens=[256],
    ttft_tokens=None,
    repeats=3,
    warmup=1,
    idle_s=0.0,
)
# Two burners on a 2-core box slow llama.cpp's spinning thread barrier to ~27 s per 128-token
# request: the burner bench is small, and the burners outlive it (the test kills them as soon as
# the bench is done).
BURN_SETTINGS = BenchSettings(
    output_tokens=32, decode_prompt_tokens=32, prefill_tokens=[64], ttft_tokens=None, repeats=1, warmup=0, idle_s=0.0
)
BURN_S = 240


@pytest.fixture(scope="module")
def server(llama_server_factory, tiny_models):
    return llama_server_factory(model=tiny_models["Q4_K_M"], ctx_tokens=2048)


def _bench(url: str, settings: BenchSettings = SETTINGS):
    srv = make_server(url)
    try:
        return Bench(srv, settings).run()
    finally:
        srv.close()


def _codes(result) -> list[str]:
    return [w.split(":", 1)[0] for w in result.warnings]


def _background_cores(seconds: float = 3.0) -> float:
    """Busy cores of the machine with no bench running: the load that is neither server nor precmon."""
    a = psutil.cpu_times()
    time.sleep(seconds)
    b = psutil.cpu_times()
    return sum(getattr(b, f) - getattr(a, f) for f in BUSY_FIELDS) / seconds


def test_quiet_bench_is_not_flagged_busy(server):
    before = _background_cores()
    r = _bench(server.url)
    after = _background_cores()
    assert r.status == "ok", r.errors
    cpu = r.validity["host_cpu"]
    assert cpu["server_pids"], cpu  # the server was found by its port and subtracted
    assert cpu["server_cores"] > cpu["precmon_cores"]  # the server did the decoding
    # The server's CPU is not "other": the figure stays within the machine's load measured with
    # no bench running, before and after (on a saturated box it is lower: the server took its
    # share from the others). On a quiet machine (CI) that load is ~0 and the flag must be absent;
    # on a shared development box other work comes and goes, so only the figure is checked there.
    assert cpu["other_cores"] < max(before, after) + 0.3, (cpu, before, after)
    # CPU steal is the hypervisor's (other guests), not this box's processes: its host-busy line is
    # right whenever the measured steal passed its threshold (CI saw 0.12 cores once), and must be
    # absent otherwise. The other-processes line is what this test is about.
    busy = [w for w in r.warnings if w.startswith("host-busy")]
    steal_lines = [w for w in busy if "(CPU steal)" in w]
    assert bool(steal_lines) == ((cpu.get("steal_cores") or 0) > STEAL_CORES_MAX), (busy, cpu)
    if max(before, after) < OTHER_CORES_MAX / 2:
        assert not [w for w in busy if w not in steal_lines], r.warnings
    assert "client-server-gap" not in _codes(r), r.warnings


def test_bench_beside_two_cpu_burners_is_flagged_host_busy(server):
    # the burner is the process we kill (a `timeout` wrapper killed with SIGKILL leaves its child
    # spinning), and it ends by itself after BURN_S even if this process dies
    burn = [sys.executable, "-c", f"import time\nend = time.monotonic() + {BURN_S}\nwhile time.monotonic() < end: pass"]
    burners = [subprocess.Popen(burn) for _ in range(2)]
    try:
        r = _bench(server.url, BURN_SETTINGS)
    finally:
        for p in burners:
            p.kill()
            p.wait(timeout=10)
    assert r.status == "ok", r.errors  # the data is real: flagged, not failed
    cpu = r.validity["host_cpu"]
    assert cpu["other_cores"] > OTHER_CORES_MAX, cpu
    assert "host-busy" in _codes(r), r.warnings
    # per run too
    first = next(x for x in r.runs if x.phase == "decode")
    assert first.extra.validity["other_cores"] > OTHER_CORES_MAX, first.extra.validity


def test_bursting_proxy_is_flagged_client_server_gap(server):
    proxy = BurstProxy(int(server.url.rsplit(":", 1)[1]))
    try:
        r = _bench(proxy.url)
    finally:
        proxy.close()
    assert r.status == "ok", r.errors
    gap = [w for w in r.warnings if w.startswith("client-server-gap:")]
    assert any("decode" in w and "the server's figure stands" in w for w in gap), r.warnings
    assert any("TTFT" in w for w in gap), r.warnings
    assert r.validity["client_server"]["decode_gap_median"] > 1.0
