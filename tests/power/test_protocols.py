"""The power layer's protocols say what callers use, and the implementations have it all."""

from __future__ import annotations

import inspect

from precmon.power.base import BlockingSource, EnergyMeter, GatedCounterSource, Sample, SampleHistory
from precmon.power.nvml import NvmlSource
from precmon.power.sampler import PowerSampler, _blocking, _reader


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
