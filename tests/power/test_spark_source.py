"""The spbm source over fixture trees written as the driver writes them (tests/power/spark_tree.py):
draw channels by label, the EWMA controllers and budgets kept out of them, energy accumulators as
counters (wrap and reset), hidden channels, the status channel, and an injectable sysfs root."""

from dataclasses import replace

import pytest

from precmon.power.hwmon import open_hwmon
from precmon.power.spark import find_spbm, is_status, open_spbm
from precmon.power.spark.counters import EnergyTotal
from precmon.power.spark.layout import ENERGY_WRAP_UJ
from precmon.power.windows import headline, window_from_samples
from tests.power.spark_tree import energy_path, power_path, write_spbm

DRAWS = {
    "hwmon3:sys_total": "system",
    "hwmon3:soc_pkg": "soc",
    "hwmon3:cpu_gpu": "module",
    "hwmon3:cpu_p": "cpu",
    "hwmon3:cpu_e": "cpu",
    "hwmon3:vcore": "rail",
    "hwmon3:dc_input": "rail",
    "hwmon3:gpu": "gpu",
    "hwmon3:prereg": "rail",
    "hwmon3:dla": "rail",
    "hwmon3:pkg": "soc",
}


def test_channels_by_label_with_counters_and_no_controllers(fakeroot):
    write_spbm(fakeroot.root, budgets=True)
    (src,), missing = open_hwmon()
    assert src.kind == "spbm" and "spbm" not in {u.kind for u in missing}
    chans = {c.id: c for c in src.channels()}
    status = chans.pop("hwmon3:status")
    assert is_status(status) and not status.has_watts
    assert {cid: c.scope for cid, c in chans.items()} == DRAWS  # no pl1/syspl2, no budget_gpu row
    counters = {c.label for c in chans.values() if c.has_energy_counter}
    assert counters == {"cpu_e", "cpu_p", "gpu", "pkg"}
    samples = {s.channel_id: s for s in src.read(full=True)}
    assert samples["hwmon3:sys_total"].watts == 25.0
    assert samples["hwmon3:gpu"].watts == 5.0 and samples["hwmon3:gpu"].energy_j == 1000.0  # 1e6 mJ
    st = samples["hwmon3:status"].extra
    assert st["prochot"] == 0 and st["pl_level"] == 1 and st["temp_c"] == 31.0
    assert (st["pl1_ewma_w"], st["pl1_cap_w"], st["pl1_max_w"]) == (18.0, 140.0, 250.0)
    assert st["syspl2_cap_w"] == 244.0 and st["budget_gpu_w"] == 170.0
    fast = {s.channel_id: s for s in src.read(full=False)}["hwmon3:status"].extra
    assert set(fast) == {
        "prochot",
        "pl_level",
        *(f"{c}_{k}_w" for c in ("pl1", "pl2", "syspl1", "syspl2") for k in ("ewma", "cap")),
    }
    # the headline is the system total: neither the 27 W syspl2 EWMA nor a budget
    ch, watts = max(((c, samples[c.id].watts) for c in chans.values() if c.scope == "system"), key=lambda x: x[1])
    assert ch.label == "sys_total" and watts == 25.0


def test_hidden_channels_leave_gaps_and_are_listed(fakeroot):
    d = write_spbm(fakeroot.root, hidden=("soc_pkg", "power:gpu", "prochot"))
    src = open_spbm(d)
    assert src is not None
    labels = [c.label for c in src.channels()]
    assert "soc_pkg" not in labels and "cpu_gpu" in labels
    # gpu's power is hidden, its accumulator is not: a channel of the counter alone
    (gpu,) = [c for c in src.channels() if c.label == "gpu"]
    assert gpu.id == "hwmon3:gpu" and gpu.has_energy_counter
    info = src.describe()
    assert info["hidden"] == ["soc_pkg", "gpu"]
    assert "prochot" not in info["status"] and "pl_level" in info["status"]
    assert not (d / "power2_input").exists() and (d / "power3_label").read_text() == "cpu_gpu\n"


def test_unreadable_register_is_no_reading(fakeroot):
    d = write_spbm(fakeroot.root)
    power_path(d, "sys_total").write_text(f"{0xFFFFFFFF * 1000}\n")  # telemetry inactive
    src = open_spbm(d)
    assert src is not None
    s = {x.channel_id: x for x in src.read()}["hwmon3:sys_total"]
    assert s.watts is None


def test_energy_total_unwraps_32bit_millijoules_and_tells_a_reset():
    e = EnergyTotal()
    top = ENERGY_WRAP_UJ - 2_000_000  # 2 J below the wrap
    assert e.update(0.0, top) == top / 1e6
    assert e.update(0.1, 3_000_000) == pytest.approx(top / 1e6 + 5.0)  # wrapped: +5 J in 0.1 s
    assert e.wraps == 1
    total = e.update(0.2, 4_000_000)
    assert e.update(0.3, 500_000) == pytest.approx(total + 0.5)  # a reset to near zero: +0.5 J, not +4.29 MJ
    assert e.resets == 1


def test_phase_window_is_the_counter_difference(fakeroot):
    """Energy of a window from the accumulator, not the oscillating instant watts."""
    d = write_spbm(fakeroot.root, energy_mj={"gpu": 7_000_000})
    src = open_spbm(d)
    assert src is not None
    samples = []
    for i in range(21):  # 2 s; firmware watts hunt 5 ↔ 45 W, the accumulator says 30 W
        power_path(d, "gpu").write_text(f"{(45 if i % 2 else 5) * 1_000_000}\n")
        energy_path(d, "gpu").write_text(f"{(7_000_000 + i * 3_000) * 1000}\n")  # 3 J per 0.1 s
        (s,) = [s for s in src.read(full=False) if s.channel_id == "hwmon3:gpu"]
        samples.append(replace(s, t_s=100.0 + i * 0.1))  # a steady 10 Hz sampler's times
    win = window_from_samples(samples, "gpu", "decode")
    assert win is not None and win.method == "counter"
    assert win.energy_j == pytest.approx(60.0) and win.avg_watts == pytest.approx(30.0, rel=0.06)
    assert headline([win]) is win


def test_find_spbm_takes_a_root(tmp_path, monkeypatch):
    monkeypatch.delenv("PRECMON_SYSFS_ROOT", raising=False)
    write_spbm(tmp_path, hwmon="hwmon7")
    (tmp_path / "sys/class/hwmon/hwmon2").mkdir()
    (tmp_path / "sys/class/hwmon/hwmon2/name").write_text("nvme\n")
    assert [p.name for p in find_spbm(tmp_path)] == ["hwmon7"]
    assert find_spbm(tmp_path / "nowhere") == []


def test_driver_before_dc7a559_reads_the_ewma_not_the_limit(fakeroot):
    """0.2.x named the EWMA `ewma_pl1` and let `pl1` read the limit (140 W) itself. `ewma_pl1` comes
    first here: channels are read in index order, so with `pl1` after it, only the fix keeps the
    limit from overwriting the EWMA (the other order passed without the fix)."""
    d = fakeroot.files(
        "/sys/class/hwmon/hwmon1",
        name="spbm",
        power1_label="sys_total",
        power1_input=25_000_000,
        power2_label="ewma_pl1",
        power2_input=17_000_000,
        power3_label="pl1",
        power3_input=140_000_000,
        power3_cap=140_000_000,
    )
    src = open_spbm(d)
    assert src is not None and [c.label for c in src.channels()] == ["sys_total", "spbm status"]
    (status,) = [s for s in src.read() if s.channel_id == "hwmon1:status"]
    assert status.extra == {"pl1_ewma_w": 17.0, "pl1_cap_w": 140.0}
