"""Every place that names "the headline power" picks it with power/windows.py's one rule.

The bench (windows of a phase, each node's through power/fleet.py), the TUI power panel and the sweep's cool-down wait (newest
samples) once had copies of the rule that differed on ties; the channels below tie on scope, so
a copy that breaks the tie differently (first listed, smallest id) picks another channel.
"""

from __future__ import annotations

from types import SimpleNamespace

from precmon.core.schema import Run
from precmon.core.settings import BenchSettings
from precmon.measure import bench, request
from precmon.power import fleet
from precmon.power.base import Channel, EnergyWindow, Sample
from precmon.power.windows import headline, headline_now
from precmon.sweep.runner import SweepRunner
from precmon.tui.power_view import power_snapshot

# Two module-rank channels (the smaller listed first, and first by id) and a gpu one.
CHANNELS = [
    Channel("a:soc", "hwmon", "soc", "soc"),
    Channel("b:module", "jetson", "VDD_IN", "module"),
    Channel("c:gpu", "nvml", "gpu", "gpu", has_energy_counter=True),
    Channel("host", "host", "host", "system", has_watts=False),
]
WATTS = {"a:soc": 3.0, "b:module": 9.0, "c:gpu": 30.0}


class TieMeter:
    def channels(self) -> list[Channel]:
        return list(CHANNELS)

    def latest(self) -> dict[str, Sample]:
        out = {cid: Sample(cid, 1.0, w) for cid, w in WATTS.items()}
        out["host"] = Sample("host", 1.0, None)
        return out

    def history(self, channel_id: str, seconds: float) -> list[Sample]:
        return []

    def errors(self) -> dict[str, str]:
        return {}

    def begin(self, phase: str) -> None:
        pass

    def end(self, phase: str) -> list[EnergyWindow]:
        return [
            EnergyWindow(c.id, c.scope, phase, 1.0, WATTS[c.id], WATTS[c.id], WATTS[c.id], "integrated", 10)
            for c in CHANNELS
            if c.has_watts
        ]


def test_the_rule_picks_the_larger_of_two_tied_channels():
    ch, watts = headline_now(CHANNELS, TieMeter().latest())
    assert (ch.id, watts) == ("b:module", 9.0)
    assert headline(TieMeter().end("x")).channel_id == "b:module"
    assert headline_now(CHANNELS, {}) is None


def test_the_bench_uses_the_rule():
    # the bench's phase windows (measure/request.py) go through power/fleet.py, whose per-node pick is the rule
    assert request.fleet is fleet.fleet and fleet.headline is headline
    b = bench.Bench(SimpleNamespace(kind="fake", url="http://127.0.0.1:1"), BenchSettings(), meter=TieMeter())
    run = Run("prefill", 16, 1)
    b._power("prefill", run)
    assert (run.extra.power_channel, run.power_w) == ("b:module", 9.0)


def test_the_power_panel_uses_the_rule():
    snap = power_snapshot(TieMeter(), [])
    assert (snap.headline_scope, snap.headline_w) == ("module", 9.0)


def test_the_sweep_cooldown_uses_the_rule():
    # its watts are power/fleet.py's live sum, each node's pick by the rule: this machine's alone here
    assert fleet.headline_now is headline_now
    assert SweepRunner._headline_watts(SimpleNamespace(meter=TieMeter())) == 9.0
    assert SweepRunner._headline_watts(SimpleNamespace(meter=None)) is None
