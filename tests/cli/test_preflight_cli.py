"""The preflight headless (docs/design.md §4 "Preflight"): `bench` and `sweep` print the findings
before measuring and keep them in every variant's `warnings` and in `host.preflight`; `--strict`
exits 2 before anything is measured; a box fit to measure prints nothing and keeps nothing."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from precmon.cli import main
from precmon.measure.trust.preflight import CODES
from precmon.power import box
from tests.fakes.nvml import NoDriver, h200
from tests.fakes.timed_server import Behaviour, TimedServer
from tests.power.spark_tree import write_spbm

FAST = ["--quick", "--repeats", "1", "--warmup", "0", "--idle-s", "0", "--no-power", "--prefill-tokens", "32"]
FAST += ["--ttft-tokens", "32", "--output-tokens", "8", "--decode-prompt-tokens", "16"]


@pytest.fixture
def root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    r = tmp_path / "root"
    (r / "proc").mkdir(parents=True)
    monkeypatch.setenv("PRECMON_SYSFS_ROOT", str(r))
    monkeypatch.setenv("PRECMON_PROC_ROOT", str(r / "proc"))
    monkeypatch.setattr(box, "load_nvml", NoDriver)
    return r


def _bench(tmp_path: Path, *extra: str) -> tuple[int, Path]:
    out = tmp_path / "out"
    with TimedServer(Behaviour(itl_s=0.001)) as srv:
        code = main(["bench", "--url", srv.url, "--out", str(out), *FAST, *extra])
    return code, out / "results.json"


def test_bench_on_a_capped_spark_says_so_first_and_keeps_it(root, tmp_path, capsys):
    write_spbm(root, caps_w={"pl1": 30.0})
    code, results = _bench(tmp_path)
    err = capsys.readouterr().err
    assert code == 0, err
    head = err[: err.index("results:")]  # the findings come before the measurement's own lines
    assert "preflight: this box is not fit to measure (2 findings)" in head and "power-capped: spbm hwmon3 pl1" in head
    doc = json.loads(results.read_text())
    findings = doc["host"]["preflight"]["findings"]
    assert [f.split(" ", 1)[0] for f in findings] == ["power-capped:", "safe-mode:"]
    assert all(f in doc["variants"][0]["warnings"] for f in findings)


def test_bench_strict_exits_2_before_measuring(root, tmp_path, capsys):
    write_spbm(root, caps_w={"pl1": 30.0})
    code, results = _bench(tmp_path, "--strict")
    err = capsys.readouterr().err
    assert code == 2 and not results.exists()
    assert "power-capped: spbm hwmon3 pl1 capped at 30 W" in err and "--strict: not measured" in err


def test_a_lowered_nvml_limit_is_kept_in_the_results(root, tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(box, "load_nvml", lambda: h200(limit_mw=350_000))
    code, results = _bench(tmp_path)
    assert code == 0
    warnings = json.loads(results.read_text())["variants"][0]["warnings"]
    [line] = [w for w in warnings if w.split(" ", 1)[0] in CODES]
    assert line.startswith("power-capped: GPU 0 (NVIDIA H200) power limit 350 W, below its default 700 W")


def test_a_box_fit_to_measure_prints_and_keeps_nothing(root, tmp_path, monkeypatch, capsys):
    write_spbm(root)
    monkeypatch.setattr(box, "load_nvml", h200)  # at its default limit
    code, results = _bench(tmp_path, "--strict")
    assert code == 0 and "preflight" not in capsys.readouterr().err
    doc = json.loads(results.read_text())
    assert doc["host"]["preflight"]["findings"] == [] and doc["host"]["preflight"]["checks"]["gpu_power_limit"] == "ok"
    assert not [w for w in doc["variants"][0].get("warnings") or [] if w.split(" ", 1)[0] in CODES]


def test_sweep_strict_exits_2(root, tmp_path, capsys):
    write_spbm(root, caps_w={"syspl1": 100.0})
    spec = tmp_path / "s.toml"
    spec.write_text('[[variant]]\nlabel = "a"\nprecision = "int4"\nurl = "http://127.0.0.1:9"\n')
    code = main(["sweep", str(spec), "--headless", "--strict", "--out", str(tmp_path / "o")])
    assert code == 2 and "power-capped: spbm hwmon3 syspl1 capped at 100 W" in capsys.readouterr().err
    assert not (tmp_path / "o" / "results.json").exists()
