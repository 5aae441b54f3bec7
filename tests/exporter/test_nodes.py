"""A model served over several machines (`--power-from`, issue 38): two `precmon exporter`
processes on loopback, each over a fixture power tree whose energy counter advances at a known
rate (node-a 40 W, node-b 65 W), and a server whose timing is known (tests/fakes/timed_server.py).

The bench's power is then the nodes' sum, each node's part is named in `power_by_node`, a node
whose exporter is gone (or whose counter stands still) makes its windows' sums n/a with a
`node-missing:` warning, and a node without any power source is named unmeasured in the scope
line. No power source of this machine takes part (a sampler over the nodes alone), so every
figure is the fixtures'.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from precmon.core.settings import BenchSettings
from precmon.measure.results import host_from_meter, results_document
from precmon.power.remote import open_nodes
from precmon.power.sampler import PowerSampler
from precmon.report.analysis.nodes import node_lines, scope_line
from precmon.servers.detect import make_server
from tests.exporter.conftest import ExporterProc, free_port, wait_for, write_sysfs
from tests.fakes.measure import measure
from tests.fakes.timed_server import Behaviour, TimedServer

# Each window's sum needs every node's exporter read within its deadline: on a loaded box (three
# xdist workers on 2 cores, CI 2026-12-05) a read missed it, the window was rightly null and the
# decode watts read None. So these run with the `timing` tests, one at a time.
pytestmark = pytest.mark.timing

RATES_W = {"node-a": 40.0, "node-b": 65.0}
E0_UJ = 5_000_000_000
PLAN = BenchSettings(
    output_tokens=128,  # 1.3 s decode windows at 10 ms a token
    decode_prompt_tokens=16,
    prefill_tokens=[64],
    ttft_tokens=None,
    repeats=2,
    warmup=0,
    idle_s=1.0,
)


class PowerTrees:
    """One spbm tree per node (PRECMON_SYSFS_ROOT of its exporter); a thread advances each energy
    counter at its node's rate every 5 ms, written whole (a rename) so no read sees half a number."""

    def __init__(self, tmp: Path) -> None:
        self.roots = {
            node: write_sysfs(
                tmp / node,
                {
                    "hwmon0": {
                        "name": "spbm",
                        "power1_label": "sys_total",
                        "power1_input": int(w * 1e6),
                        "energy1_label": "sys_total",
                        "energy1_input": E0_UJ,
                    }
                },
            )
            for node, w in RATES_W.items()
        }
        self.frozen: set[str] = set()
        self.stop = threading.Event()
        self.t0 = time.monotonic()
        self.thread = threading.Thread(target=self._advance, daemon=True)

    def _advance(self) -> None:
        at = dict.fromkeys(RATES_W, float(E0_UJ))
        last = time.monotonic()
        while not self.stop.is_set():
            now = time.monotonic()
            for node, w in RATES_W.items():
                if node not in self.frozen:
                    at[node] += w * (now - last) * 1e6
                f = self.roots[node] / "sys" / "class" / "hwmon" / "hwmon0" / "energy1_input"
                part = f.with_name("energy1_input.new")
                part.write_text(f"{int(at[node]) // 1000 * 1000}\n")  # the driver's µJ are whole mJ
                os.replace(part, f)
            last = now
            time.sleep(0.005)


@pytest.fixture
def trees(tmp_path: Path) -> Iterator[PowerTrees]:
    t = PowerTrees(tmp_path)
    t.thread.start()
    yield t
    t.stop.set()
    t.thread.join(2)


def start_exporter(exporter_proc, root: Path, node: str) -> tuple[ExporterProc, str]:
    port = free_port()
    proc = exporter_proc(["--listen", f"127.0.0.1:{port}", "--node", node, "--interval-s", "0.5"], root)
    url = f"http://127.0.0.1:{port}"
    wait_for(url + "/metrics", f"{node}'s exporter")
    return proc, url


def bench_over(urls: list[str], on_run=None):
    """A bench against the timed server, power from the nodes alone; (variant, document)."""
    nodes = open_nodes(urls, taken=["this-machine"])
    with TimedServer(Behaviour(itl_s=0.01)) as srv, PowerSampler([], nodes=nodes) as meter:
        res = measure(make_server(srv.url), PLAN, meter=meter, on_run=on_run)
        doc = results_document([res], PLAN.to_dict(), host_from_meter(meter))
    return doc.variants[0], doc


def test_two_nodes_are_summed_and_each_is_named(trees, exporter_proc) -> None:
    urls = [start_exporter(exporter_proc, trees.roots[n], n)[1] for n in RATES_W]
    res, doc = bench_over(urls)
    assert res.status == "ok", res.errors
    assert not [w for w in res.warnings or [] if w.startswith("node-missing:")]
    m = res.metrics
    assert m["power_decode_w"] == pytest.approx(105.0, rel=0.03)  # 40 + 65 W
    assert m["power_idle_w"] == pytest.approx(105.0, rel=0.03)
    assert m["power_prefill_w"] == pytest.approx(105.0, rel=0.15)  # 30 ms windows: the fixture's 5 ms steps
    by = {n.node: n for n in res.power_by_node}
    assert list(by) == ["node-a", "node-b"]
    for node, w in RATES_W.items():
        assert by[node].power_decode_w == pytest.approx(w, rel=0.03)
        assert by[node].power_idle_w == pytest.approx(w, rel=0.03)
        assert by[node].url == urls[list(RATES_W).index(node)]
        assert by[node].edge_ms is not None and by[node].edge_ms < 200
    assert sum(by[n].power_decode_w for n in RATES_W) == pytest.approx(m["power_decode_w"], rel=0.01)
    jpt = sum(by[n].energy_decode_j_per_token for n in RATES_W)
    assert jpt == pytest.approx(m["energy_decode_j_per_token"], rel=0.01)  # the parts add up to J/token
    decode = [r for r in res.runs if r.phase == "decode"]
    for r in decode:
        assert [p["node"] for p in r.extra.power_by_node] == ["node-a", "node-b"]
        assert r.extra.power_window == "first token → end of stream"  # each node cut at the first token
    assert [(n.name, n.exporter) for n in doc.host.nodes] == [("node-a", "precmon"), ("node-b", "precmon")]
    assert doc.host.nodes[0].power_sources[0].id == "node-a/hwmon0:sys_total"
    line = scope_line(doc)
    assert "this machine unmeasured" not in line and "node-a node-a/hwmon0:sys_total (system)" in line
    assert node_lines(doc)[0].startswith("Power by node, ")


def test_a_node_whose_exporter_is_gone_makes_no_sum(trees, exporter_proc) -> None:
    a = start_exporter(exporter_proc, trees.roots["node-a"], "node-a")[1]
    proc_b, b = start_exporter(exporter_proc, trees.roots["node-b"], "node-b")
    decode_runs: list[object] = []

    def gone_after_the_first_decode(run) -> None:
        if run.phase == "decode":
            decode_runs.append(run)
            if len(decode_runs) == 1:
                proc_b.stop()  # node-b stops answering mid-run

    res, _ = bench_over([a, b], on_run=gone_after_the_first_decode)
    (warning,) = [w for w in res.warnings if w.startswith("node-missing:")]
    assert "node-b" in warning
    first, second = [r for r in res.runs if r.phase == "decode"]
    assert first.power_w == pytest.approx(105.0, rel=0.03) and not first.extra.nodes_missing
    assert second.power_w is None and second.energy_j is None  # no summed figure for its window
    assert second.extra.nodes_missing == ["node-b"]
    assert [p["node"] for p in second.extra.power_by_node] == ["node-a"]  # what did answer is kept
    by = {n.node: n for n in res.power_by_node}
    assert by["node-b"].windows_missing and by["node-b"].windows_missing >= 2  # decode 2, prefill
    assert res.metrics["power_prefill_w"] is None  # every prefill window came after: none summed


def test_a_counter_that_stands_still_is_a_missing_node(trees, exporter_proc) -> None:
    urls = [start_exporter(exporter_proc, trees.roots[n], n)[1] for n in RATES_W]
    trees.frozen.add("node-b")  # its exporter answers, with the same joules every time
    res, _ = bench_over(urls)
    assert any(w.startswith("node-missing: node-b") for w in res.warnings)
    assert res.metrics["power_decode_w"] is None and res.metrics["power_idle_w"] is None


def test_a_node_without_a_power_source_is_named_unmeasured(tmp_path, trees, exporter_proc) -> None:
    a = start_exporter(exporter_proc, trees.roots["node-a"], "node-a")[1]
    (tmp_path / "bare").mkdir()
    bare = start_exporter(exporter_proc, write_sysfs(tmp_path / "bare", {}), "node-c")[1]  # psutil only: no watts
    res, doc = bench_over([a, bare])
    assert res.metrics["power_decode_w"] == pytest.approx(40.0, rel=0.03)  # the nodes with power
    assert not [w for w in res.warnings or [] if w.startswith("node-missing:")]
    (c,) = [n for n in doc.host.nodes if n.name == "node-c"]
    assert c.unmeasured and c.power_sources == []
    assert "node-c unmeasured (its exporter serves no power source, not in the sum)" in scope_line(doc)
