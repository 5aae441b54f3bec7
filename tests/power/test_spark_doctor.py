"""`precmon doctor` on a Spark fixture: the spbm driver named with its channels, counters, limits,
PROCHOT and what it hides; machines without it keep the two-key JSON."""

from __future__ import annotations

import argparse
import json

from precmon.cli.commands import doctor_cmd
from precmon.power import box, discover
from precmon.power.spark.report import spbm_report
from tests.fakes.nvml import NoDriver
from tests.power.spark_tree import write_spbm


def _doctor(monkeypatch, capsys, as_json: bool) -> str:
    monkeypatch.setattr(discover, "open_nvml", lambda: (None, [discover.Unavailable("nvml", "driver missing: x")]))
    monkeypatch.setattr(box, "load_nvml", NoDriver)
    monkeypatch.setattr(doctor_cmd, "discover_servers", lambda urls: [])
    monkeypatch.setattr(doctor_cmd, "power_report", lambda: [])
    assert doctor_cmd.run(argparse.Namespace(json=as_json, url=None)) == 0
    return capsys.readouterr().out


def test_doctor_reports_the_spbm_driver(fakeroot, monkeypatch, capsys):
    write_spbm(fakeroot.root, prochot=1, hidden=("dla", "power:gpu"))
    (entry,) = json.loads(_doctor(monkeypatch, capsys, True))["spbm"]
    assert entry["path"].endswith("sys/class/hwmon/hwmon3")
    assert entry["hidden"] == ["gpu", "dla"]
    assert entry["energy_counters"] == ["cpu_p", "cpu_e", "pkg", "gpu"]  # paired first, then counter-only
    assert entry["now"] == {"prochot": 1.0, "pl_level": 1.0, "temp_c": 31.0}
    assert entry["limits_w"]["syspl1"] == {"ewma": 26.0, "cap": 231.0, "max": 300.0, "min": 5.0}
    text = _doctor(monkeypatch, capsys, False)
    assert "DGX Spark power driver (spbm)" in text and "PROCHOT asserted" in text
    assert "syspl1: ewma 26 W, cap 231 W, max 300 W, min 5 W" in text
    assert "hidden by the driver (firmware did not name them): gpu, dla" in text


def test_no_driver_no_key(fakeroot, monkeypatch, capsys):
    assert spbm_report() == []
    assert set(json.loads(_doctor(monkeypatch, capsys, True))) == {"power_sources", "servers", "preflight"}


def test_doctor_says_a_capped_spark_is_not_fit_to_measure(fakeroot, monkeypatch, capsys):
    """30 W of PL1's 140 W: `power-capped:` (and the safety-mode signature) in doctor's JSON and table."""
    write_spbm(fakeroot.root, caps_w={"pl1": 30.0})
    findings = json.loads(_doctor(monkeypatch, capsys, True))["preflight"]["findings"]
    assert [f.split(" ", 1)[0] for f in findings] == ["power-capped:", "safe-mode:"]
    text = " ".join(_doctor(monkeypatch, capsys, False).split())  # the table wraps long lines
    assert "Preflight: is this box fit to measure?" in text
    assert "power-capped: spbm hwmon3 pl1 capped at 30 W, below its EC default 140 W" in text


def test_doctor_finds_nothing_on_an_uncapped_spark(fakeroot, monkeypatch, capsys):
    write_spbm(fakeroot.root)
    doc = json.loads(_doctor(monkeypatch, capsys, True))
    assert doc["preflight"]["findings"] == [] and doc["preflight"]["checks"]["spbm_limits"] == "ok"
    assert "no finding" in _doctor(monkeypatch, capsys, False)
