"""The spbm energy accumulators as monotonic joules: wraps unwrapped, resets told apart from wraps.

A 32-bit millijoule register wraps at 4.29 MJ (`layout.ENERGY_WRAP_UJ`); a firmware restart or a
driver reload can also start it again from near zero. Both read as a smaller value than the last.
A wrap adds what was left to the top, so its delta is `cur + wrap − prev`; that is only possible
if the device drew no more than `MAX_PLAUSIBLE_W` since the last read, and a reset is anything
else: then only `cur` (what accrued since the reset) is added. Either way the total never goes
back, so windows subtract freely (`power/windows.py`).
"""

from __future__ import annotations

from .layout import ENERGY_WRAP_UJ, UJ_PER_J

# GB10's whole box is ~240 W (the driver's SysPL2 default 244 W, ceiling 300 W): 1 kW over the
# time between two reads is beyond any domain it measures.
MAX_PLAUSIBLE_W = 1000.0


class EnergyTotal:
    """Raw µJ readings with their times in, a monotonic total in joules out."""

    def __init__(self, wrap_uj: int = ENERGY_WRAP_UJ) -> None:
        self.wrap_uj = wrap_uj
        self._prev: tuple[float, int] | None = None
        self._total_uj = 0
        self.resets = 0
        self.wraps = 0

    def update(self, t_s: float, raw_uj: int) -> float:
        if self._prev is None:
            self._total_uj = raw_uj
        else:
            t0, prev = self._prev
            if raw_uj >= prev:
                self._total_uj += raw_uj - prev
            else:
                wrapped = raw_uj + self.wrap_uj - prev
                if wrapped <= MAX_PLAUSIBLE_W * max(t_s - t0, 0.0) * UJ_PER_J:
                    self._total_uj += wrapped
                    self.wraps += 1
                else:
                    self._total_uj += raw_uj
                    self.resets += 1
        self._prev = (t_s, raw_uj)
        return self._total_uj / UJ_PER_J
