"""Another node as a power source (power/remote/): its exporter's text read right, its windows taken
only from readings at both edges, and several nodes summed or, missing one, not summed at all.

The DCGM fixture is dcgm-exporter's own format (its default counters file names
`DCGM_FI_DEV_POWER_USAGE` in W and `DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION` in mJ, per GPU, with
`gpu`, `UUID`, `device`, `modelName` and `Hostname` labels), with a family whose name begins like
the power one (`…_POWER_USAGE_INSTANT`, newer DCGM) that must not be taken for it.
"""

from __future__ import annotations

import time

import pytest

from precmon.power.base import ROUND_TRIP_S, Channel, EnergyWindow, Sample
from precmon.power.fleet import edge_covered, fleet, total_now
from precmon.power.remote import DCGM, PRECMON, ExpositionError, open_nodes, parse
from precmon.power.sampler import PowerSampler
from tests.fakes.wire_servers import Scripted, ScriptedServer

GPU_LABELS = 'gpu="{i}",UUID="GPU-{i}",device="nvidia{i}",modelName="NVIDIA H100 80GB HBM3",Hostname="dgx-07"'


def dcgm_text(
    energy_mj: tuple[float, ...] = (1_000_000.0, 2_000_000.0), watts: tuple[float, ...] = (300.5, 250.0)
) -> str:
    lines = ["# HELP DCGM_FI_DEV_SM_CLOCK SM frequency (in MHz).", "# TYPE DCGM_FI_DEV_SM_CLOCK gauge"]
    lines += [f"DCGM_FI_DEV_SM_CLOCK{{{GPU_LABELS.format(i=i)}}} 1980" for i in range(len(watts))]
    lines += ["# HELP DCGM_FI_DEV_POWER_USAGE Power draw (in W).", "# TYPE DCGM_FI_DEV_POWER_USAGE gauge"]
    lines += [f"DCGM_FI_DEV_POWER_USAGE{{{GPU_LABELS.format(i=i)}}} {w}" for i, w in enumerate(watts)]
    lines += ["# TYPE DCGM_FI_DEV_POWER_USAGE_INSTANT gauge"]
    lines += [f"DCGM_FI_DEV_POWER_USAGE_INSTANT{{{GPU_LABELS.format(i=i)}}} 999" for i in range(len(watts))]
    lines += ["# HELP DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION Total energy consumption since boot (in mJ)."]
    lines += ["# TYPE DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION counter"]
    lines += [f"DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION{{{GPU_LABELS.format(i=i)}}} {e}" for i, e in enumerate(energy_mj)]
    return "\n".join(lines) + "\n"


PRECMON_TEXT = """# TYPE precmon_node_info gauge
precmon_node_info{host="spark-b",version="0.1.0"} 1.0
# TYPE precmon_power_watts gauge
precmon_power_watts{host="spark-b",scope="system",source="hwmon3:sys_total"} 38.2
precmon_power_watts{host="spark-b",scope="gpu",source="hwmon3:gpu"} 9.25
# TYPE precmon_energy_joules counter
precmon_energy_joules_total{host="spark-b",method="counter",scope="system",source="hwmon3:sys_total"} 5000.0
precmon_energy_joules_total{host="spark-b",method="integrated",scope="gpu",source="hwmon3:gpu"} 12.5
precmon_cpu_utilization_ratio{host="spark-b",source="host"} 0.5
"""


def test_a_dcgm_exposition_is_its_gpus_added_up() -> None:
    found = parse(dcgm_text())
    assert (found.exporter, found.name, found.gpus) == (DCGM, "dgx-07", 2)
    (r,) = found.readings.values()
    assert (r.source, r.scope, r.method) == ("dcgm:gpus", "gpu", "counter")
    assert r.watts == pytest.approx(550.5)  # POWER_USAGE, not POWER_USAGE_INSTANT (999 each)
    assert r.energy_j == pytest.approx(3000.0)  # millijoules → joules, both GPUs


def test_a_dcgm_gpu_without_a_value_makes_no_sum() -> None:
    text = dcgm_text().replace('DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION{gpu="1"', 'X{gpu="1"')
    (r,) = parse(text).readings.values()
    assert r.energy_j is None  # a sum short of a GPU would read low, and right
    assert r.watts == pytest.approx(550.5)
    (r,) = parse(dcgm_text().replace(" 250.0\n", " NaN\n")).readings.values()
    assert r.watts is None


def test_dcgm_with_watts_only_is_a_channel_without_a_counter() -> None:
    text = "\n".join(x for x in dcgm_text().splitlines() if "TOTAL_ENERGY" not in x)
    (r,) = parse(text).readings.values()
    assert (r.watts, r.energy_j, r.method) == (pytest.approx(550.5), None, None)


def test_a_precmon_exposition_names_its_node_and_channels() -> None:
    found = parse(PRECMON_TEXT)
    assert (found.exporter, found.name) == (PRECMON, "spark-b")
    sys_total, gpu = found.readings["hwmon3:sys_total"], found.readings["hwmon3:gpu"]
    assert (sys_total.scope, sys_total.watts, sys_total.energy_j, sys_total.method) == (
        "system",
        38.2,
        5000.0,
        "counter",
    )
    assert (gpu.scope, gpu.watts, gpu.energy_j, gpu.method) == ("gpu", 9.25, 12.5, "integrated")


def test_hostile_or_foreign_text() -> None:
    assert parse("node_load1 0.5\n").exporter is None  # node_exporter: neither exporter's families
    with pytest.raises(ExpositionError):
        parse('precmon_power_watts{source="x" 1\n')
    evil = PRECMON_TEXT.replace('host="spark-b"', 'host="a\\x1b[31mb"', 1)
    assert "\x1b" not in (parse(evil).name or "")


def test_open_nodes_reads_dcgm_and_names_nodes_apart() -> None:
    routes = {"/metrics": Scripted(body=dcgm_text().encode(), content_type="text/plain")}
    with ScriptedServer(routes) as a, ScriptedServer(dict(routes)) as b:
        na, nb = open_nodes([a.url, b.url + "/metrics"], taken=["here"])
        try:
            assert (na.node.exporter, na.node.problem, na.node.unmeasured) == (DCGM, None, None)
            assert na.node.name.startswith("dgx-07 (") and nb.node.name.startswith(
                "dgx-07 ("
            )  # the same Hostname twice
            assert na.node.name != nb.node.name
            (ch,) = na.channels()
            assert (ch.scope, ch.has_energy_counter, ch.node, ch.kind) == ("gpu", True, na.node.name, "node")
            assert ch.label.endswith("2 GPUs (DCGM)")
            (s,) = na.read(counters=True)
            assert (s.watts, s.energy_j) == (pytest.approx(550.5), pytest.approx(3000.0))
            assert 0 < s.extra[ROUND_TRIP_S] < 1.0
            (s,) = na.read(counters=False)
            assert s.energy_j is None  # between edges: watts only
        finally:
            na.close()
            nb.close()


def test_a_node_that_does_not_answer_or_has_no_power() -> None:
    with ScriptedServer({"/metrics": Scripted(body=b"node_load1 0.5\n", content_type="text/plain")}) as srv:
        (n,) = open_nodes([srv.url], taken=["here"])
        assert n.node.problem and "neither precmon's nor DCGM's" in n.node.problem
    empty = 'precmon_node_info{host="bare",version="0.1.0"} 1.0\n'
    with ScriptedServer({"/metrics": Scripted(body=empty.encode(), content_type="text/plain")}) as srv:
        (n,) = open_nodes([srv.url], taken=["here"])
        assert (n.node.name, n.node.exporter, n.channels()) == ("bare", PRECMON, [])
        assert n.node.unmeasured and not n.node.expected
    (n,) = open_nodes([f"{srv.url}/metrics"], taken=["here"])  # the server is gone now
    assert n.node.problem and n.node.problem.startswith("no answer from")
    assert n.node.expected  # a node that should have power: every window then misses it


def _w(node: str | None, watts: float, cid: str = "x", scope: str = "system", dur: float = 2.0) -> EnergyWindow:
    return EnergyWindow(f"{node}/{cid}", scope, "decode", dur, watts * dur, watts, None, "counter", 3, node=node)


def test_the_sum_of_nodes_and_a_missing_one() -> None:
    windows = [
        _w(None, 100.0, "gpu", "gpu"),
        _w(None, 140.0, "sys"),
        _w("b", 60.0, dur=2.01),
        _w("b", 9.0, "gpu", "gpu"),
    ]
    f = fleet(windows, [None, "b"])
    assert f.total is not None and f.missing == () and f.several
    assert f.total.avg_watts == pytest.approx(200.0)  # each node's widest scope: 140 + 60
    assert f.total.energy_j == pytest.approx(400.0)  # over this machine's duration
    assert [w.channel_id for w in f.by_node.values()] == ["None/sys", "b/x"]
    missing = fleet(windows, [None, "b", "c"])
    assert missing.total is None and missing.missing == ("c",)
    alone = fleet(windows[:2])  # no other node: the headline window, as before nodes existed
    assert alone.total is windows[1] and not alone.several


def test_a_node_window_counts_only_from_edge_readings() -> None:
    ch = Channel("b/x", "node", "b: x", "system", has_energy_counter=True, node="b")
    w = EnergyWindow("b/x", "system", "p", 2.0, 120.0, 60.0, None, "counter", 2, start_s=10.01, node="b")
    assert edge_covered(w, ch, 10.0, 12.0, 0.5)
    assert not edge_covered(w, ch, 10.05, 12.0, 0.5)  # its first reading is older than the begin edge
    assert not edge_covered(w, ch, 9.0, 12.0, 0.5)  # the begin edge's reading came after the wait
    assert not edge_covered(w, ch, 10.0, 12.1, 0.5)  # the end edge's reading never came
    stale = EnergyWindow("b/x", "system", "p", 2.0, 120.0, 60.0, None, "integrated", 2, start_s=10.01, node="b")
    assert not edge_covered(stale, ch, 10.0, 12.0, 0.5)  # a counter that stood still
    local = Channel("x", "hwmon", "x", "system")
    assert edge_covered(EnergyWindow("x", "system", "p", 2.0, 2.0, 1.0, None, "integrated", 1), local, 0, 99, 0.5)


class FakeNode:
    """A node source: a constant draw and an exact counter; `answer` False: it stops answering."""

    blocking, expensive_counter, period_s = True, True, 1.0

    def __init__(self, name: str, watts: float, counter_moves: bool = True) -> None:
        self.kind, self.watts, self.moves, self.answer = f"node:{name}", watts, counter_moves, True
        self.ch = Channel(f"{name}/sys", "node", f"{name}: sys", "system", has_energy_counter=True, node=name)
        self.t0 = time.monotonic()

    def channels(self) -> list[Channel]:
        return [self.ch]

    def read(self, full: bool = True, counters: bool = True) -> list[Sample]:
        if not self.answer:
            raise OSError("connection refused")
        t = time.monotonic()
        energy = (self.watts * (t - self.t0) if self.moves else 5.0) if counters else None
        return [Sample(self.ch.id, t, self.watts, energy, {ROUND_TRIP_S: 0.002})]

    def close(self) -> None:
        pass


def test_the_sampler_keeps_a_node_window_only_while_it_answers() -> None:
    a, b, frozen = FakeNode("a", 40.0), FakeNode("b", 65.0), FakeNode("c", 10.0, counter_moves=False)
    with PowerSampler([], nodes=[a, b, frozen], rate_hz=20) as meter:
        meter.begin("p")
        time.sleep(0.3)
        got = {w.node: w for w in meter.end("p")}
        assert set(got) == {"a", "b"}  # c's counter stood still: stale, not 0 W
        assert got["a"].avg_watts == pytest.approx(40.0, rel=0.02) and got["a"].method == "counter"
        assert got["b"].edge_s == pytest.approx(0.002)
        assert total_now(meter.channels(), meter.latest(), ["a", "b"]) == pytest.approx(105.0)
        meter.begin("p")
        b.answer = False  # stops answering mid-window: its end edge has no reading
        time.sleep(0.2)
        assert {w.node for w in meter.end("p")} == {"a"}
        assert "node:b" in meter.errors()
        assert [n for n in meter.power_sources_info()] == []  # host.power_sources: this machine's only
