"""The plain parts: LiveResults folding sweep events, and which messages collapse."""

from __future__ import annotations

from pathlib import Path

from precmon.core.schema import Run, VariantResult, to_json
from precmon.report.table import build_table
from precmon.sweep.events import Progress, RunLanded, VariantFinished, VariantStarted
from precmon.tui.live import RUNNING, LiveResults
from precmon.tui.messages import PowerSampled, SweepEventArrived
from precmon.tui.power_view import PowerSnapshot, power_snapshot
from tests.tui.conftest import UNAVAILABLE, FrozenMeter


def test_live_results_fill_then_finish():
    live = LiveResults()
    live.apply(VariantStarted("Q8_0", 0, 2, "model"), "int8", "tiny-Q8_0")
    live.apply(RunLanded("Q8_0", Run("decode", 32, 64, ttft_s=0.03, decode_tok_s=380.0)))
    table = build_table(live.doc)
    assert table.columns[0].status == RUNNING and table.row("decode_tok_s").cells[0].series == (380.0,)
    assert not live.has_results and to_json(live.exportable())["variants"] == []
    result = VariantResult("Q8_0", "int8", "tiny-Q8_0", {}, metrics={"decode_tok_s": 382.2})
    live.apply(VariantFinished(result, Path("r.json")))
    assert live.has_results and build_table(live.doc).value("decode_tok_s", "Q8_0") == 382.2


def test_only_high_rate_messages_collapse():
    snap = PowerSnapshot((), None, None)
    assert PowerSampled(snap).can_replace(PowerSampled(snap))
    progress = SweepEventArrived(Progress("a", 1, 3, "x"), "sweep")
    landed = SweepEventArrived(RunLanded("a", Run("decode", 1, 1)), "sweep")
    assert progress.can_replace(SweepEventArrived(Progress("a", 0, 3, "x"), "sweep"))
    assert not progress.can_replace(landed) and not landed.can_replace(progress)


def test_power_snapshot_rows_headline_and_absences():
    snap = power_snapshot(FrozenMeter(), UNAVAILABLE)
    assert snap.headline_scope == "system" and snap.headline_w == 24.2
    assert [r.channel_id for r in snap.rows][:3] == ["hwmon3:sys_total", "nvml:0", "host"]
    absent = [r for r in snap.rows if not r.available]
    assert [r.reason for r in absent] == [u.reason for u in UNAVAILABLE]
