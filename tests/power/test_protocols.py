"""The power layer's protocols say what callers use, and the implementations have it all."""

from __future__ import annotations

import inspect
from pathlib import Path

import pytest

from precmon.power.base import BlockingSource, EnergyMeter, GatedCounterSource, Sample, SampleHistory
from precmon.power.nvml import NvmlSource
from precmon.power.sampler import PowerSampler, _blocking, _reader

ROOT = Path(__file__).resolve().parents[2]


def _members(proto: type) -> set[str]:
    return {n for n, _ in inspect.getmembers(proto) if not n.startswith("_")} | set(
        getattr(proto, "__annotations__", {})
    )


def test_the_sampler_has_every_member_of_the_meter_protocol():
    assert _members(SampleHistory) <= _members(EnergyMeter)
    missing = {n for n in _members(EnergyMeter) if not callable(getattr(PowerSampler, n, None))}
    assert not missing


def test_nvml_declares_both_capabilities():
    assert NvmlSource.blocking is True and NvmlSource.expensive_counter is True
    assert "counters" in inspect.signature(NvmlSource.read).parameters


class Plain:
    kind = "plain"

    def __init__(self) -> None:
        self.calls: list[tuple] = []

    def channels(self):
        return []

    def read(self, full=True):
        self.calls.append((full,))
        return [Sample("p", 0.0, 1.0)]

    def close(self):
        pass


class Gated(Plain):
    expensive_counter = True
    blocking = True

    def read(self, full=True, counters=True):
        self.calls.append((full, counters))
        return []


def test_capabilities_are_used_only_where_declared():
    plain, gated = Plain(), Gated()
    _reader(plain)(True, False)
    _reader(gated)(False, False)
    assert plain.calls == [(True,)] and gated.calls == [(False, False)]
    assert not _blocking(plain) and _blocking(gated)
    assert isinstance(gated, BlockingSource) and isinstance(gated, GatedCounterSource)
    assert not isinstance(plain, GatedCounterSource)
    off = Gated()
    off.blocking = off.expensive_counter = False
    _reader(off)(True, False)
    assert not _blocking(off) and off.calls == [(True, True)]  # read(full): the counter every time


CONFORMANCE = """
from precmon.power.base import BlockingSource, EnergyMeter, GatedCounterSource, PowerSource
from precmon.power.host import HostSource
from precmon.power.hwmon import HwmonSource
from precmon.power.jetson import Ina3221Source, TegrastatsSource
from precmon.power.nvml import NvmlSource
from precmon.power.rapl import RaplSource
from precmon.power.sampler import PowerSampler


def conforms(
    s: PowerSampler, n: NvmlSource, h: HwmonSource, r: RaplSource, i: Ina3221Source, t: TegrastatsSource, o: HostSource
) -> None:
    meter: EnergyMeter = s
    sources: list[PowerSource] = [n, h, r, i, t, o]
    blocking: BlockingSource = n
    gated: GatedCounterSource = n
"""


def test_the_implementations_satisfy_the_protocols_statically(tmp_path, monkeypatch):
    """mypy, over a module that assigns each implementation to its protocol (tests are not type-checked)."""
    mypy = pytest.importorskip("mypy.api", reason="mypy is a test dependency (pip install -e '.[test]')")
    (tmp_path / "conformance.py").write_text(CONFORMANCE)
    monkeypatch.setenv("MYPYPATH", str(ROOT / "src"))  # these sources, not an installed copy
    out, err, code = mypy.run(
        [
            "--config-file",
            str(ROOT / "pyproject.toml"),
            "--cache-dir",
            str(tmp_path / "cache"),
            str(tmp_path / "conformance.py"),
        ]
    )
    assert code == 0, out + err
