"""The Power panel over several machines (`--power-from`): one row per other node, its headline
channel's watts and which exporter it came from, or why it has none (no answer at start; an
answer without any power source), never folded away among this machine's absences."""

from __future__ import annotations

import time

from rich.console import Console

from precmon.power.base import Channel, Node, Sample
from precmon.power.sampler import PowerSampler
from precmon.tui.power_view import power_snapshot
from precmon.tui.widgets.power_panel import PowerLayout


class Source:
    def __init__(self, ch: Channel, watts: float, node: Node | None = None) -> None:
        self.ch, self.watts, self.kind = ch, watts, ch.kind if node is None else f"node:{node.name}"
        if node is not None:
            self.node = node  # a NodeSource: the sampler lists it among its nodes

    def channels(self) -> list[Channel]:
        return [self.ch] if self.ch.id else []

    def read(self, full: bool = True) -> list[Sample]:
        return [Sample(self.ch.id, time.monotonic(), self.watts)] if self.ch.id else []

    def close(self) -> None:
        pass


def test_a_row_per_node() -> None:
    local = Source(Channel("nvml:0", "nvml", "GB10", "gpu"), 31.0)
    b = Node("spark-b", "http://10.0.0.2:9464", "precmon")
    remote = Source(
        Channel("spark-b/hwmon3:sys_total", "node", "spark-b: hwmon3:sys_total", "system", node="spark-b"), 72.5, b
    )
    gone = Source(
        Channel("", "node", "", "system"),
        0.0,
        Node("spark-c", "http://10.0.0.3:9464", problem="no answer from http://10.0.0.3:9464: ConnectError"),
    )
    bare = Source(
        Channel("", "node", "", "system"),
        0.0,
        Node("spark-d", "http://10.0.0.4:9464", "precmon", unmeasured="its exporter serves no power source"),
    )
    with PowerSampler([local], nodes=[remote, gone, bare], rate_hz=20) as meter:
        deadline = time.monotonic() + 5
        while len(meter.latest()) < 2 and time.monotonic() < deadline:
            time.sleep(0.02)
        snap = power_snapshot(meter, [])
    rows = {r.label: r for r in snap.rows}
    assert list(rows) == ["GB10", "spark-b", "spark-c", "spark-d"]
    assert (rows["spark-b"].watts, rows["spark-b"].scope, rows["spark-b"].note) == (
        72.5,
        "system",
        "precmon: hwmon3:sys_total",
    )
    assert snap.headline_w == 31.0  # the readout's headline stays this machine's
    assert not rows["spark-c"].available and rows["spark-c"].reason.startswith("no answer from")
    assert rows["spark-d"].reason == "unmeasured: its exporter serves no power source"
    with open("/dev/null", "w") as sink:
        console = Console(width=120, record=True, color_system=None, file=sink)
        console.print(PowerLayout(snap, 16))
    text = console.export_text()
    assert "spark-b" in text and "72.5 W" in text and "precmon: hwmon3:sys_total" in text
    assert "spark-c" in text and "no answer from http://10.0.0.3:9464" in text
    assert "unmeasured: its exporter serves no power source" in text
    assert "no other power sources" not in text  # a node's reason is its own line, not folded
