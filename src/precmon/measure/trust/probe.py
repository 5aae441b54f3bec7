"""The readings behind a bench's validity checks, taken while it runs.

`ValidityProbe.start` finds the server's process tree by its listening port, reads the CPU times
and asks the meter for its GPUs' facts (max clock, processes); `before_run`/`after_run` bracket
each measured request (its own CPU figures, and the GPU samples of its window); `finish` reads
the end. `measure/trust/validity.py` decides what the figures mean. Nothing here may fail a bench:
a probe that cannot read something records why, and the check says "n/a".
"""

from __future__ import annotations

import os
import time
from typing import Any
from urllib.parse import urlsplit

import psutil

from precmon.core.schema import Run
from precmon.measure.trust import validity
from precmon.power import cpu
from precmon.power.base import EnergyMeter
from precmon.power.gpu import GpuFact, GpuFactsSource
from precmon.power.spark import is_status

GPU_KINDS = ("nvml",)


def _facts(meter: EnergyMeter | None) -> list[GpuFact]:
    if isinstance(meter, GpuFactsSource):
        try:
            return meter.gpu_facts()
        except Exception:  # noqa: BLE001 - a driver fault costs the facts, never the bench
            return []
    return []


class ValidityProbe:
    """CPU and GPU readings of one bench; build with `start`."""

    def __init__(self, url: str, meter: EnergyMeter | None) -> None:
        self.meter = meter
        self.own_pid = os.getpid()
        try:
            self.url_host = urlsplit(url).hostname or ""
        except ValueError:
            self.url_host = ""
        port = cpu.url_port(url)
        self.pids, self.why_no_server = cpu.server_pids(port, self.own_pid) if port else ([], "no port in the URL")
        # ([], None): the server runs inside precmon (a test's fake), its CPU is precmon's
        self.server_found = bool(self.pids) or self.why_no_server is None
        self.first = self._snap()
        self.last: cpu.CpuSnapshot | None = None
        self.facts = _facts(meter)
        self.gpu_samples: dict[str, list[tuple[str, float | None, dict[str, float]]]] = {}
        self._run_start: tuple[cpu.CpuSnapshot | None, float] | None = None
        self._gpu_ids = [c.id for c in meter.channels() if c.kind in GPU_KINDS] if meter else []
        # the DGX Spark's spbm status channel (PROCHOT, PL level, limits): validity.spark reads it
        self.spark_ids = [c.id for c in meter.channels() if is_status(c)] if meter else []
        self.spark_samples: dict[str, list[tuple[str, dict[str, float]]]] = {}

    @classmethod
    def start(cls, url: str, meter: EnergyMeter | None) -> ValidityProbe:
        return cls(url, meter)

    def _snap(self) -> cpu.CpuSnapshot | None:
        try:
            return cpu.snapshot(self.pids)
        except (psutil.Error, OSError):
            return None

    def before_run(self) -> None:
        self._run_start = (self._snap(), time.monotonic())

    def after_run(self, run: Run) -> None:
        """Add the run's own figures to `run.extra.validity` and keep its GPU samples."""
        if self._run_start is None:
            return
        a, t0 = self._run_start
        self._run_start = None
        b = self._snap()
        figures: dict[str, Any] = validity.run_gaps(run)
        if a is not None and b is not None:
            usage = cpu.cpu_usage(a, b, self.server_found)
            figures |= {k: usage[k] for k in ("other_cores", "steal_cores") if k in usage}
        if figures:
            run.extra.validity = figures
        if self.meter is not None:
            seconds = time.monotonic() - t0 + 0.5
            for cid in self._gpu_ids:
                kept = self.gpu_samples.setdefault(cid, [])
                kept += [(run.phase, s.watts, dict(s.extra)) for s in self.meter.history(cid, seconds) if s.t_s >= t0]
            for cid in self.spark_ids:
                status = self.spark_samples.setdefault(cid, [])
                status += [(run.phase, dict(s.extra)) for s in self.meter.history(cid, seconds) if s.t_s >= t0]

    def finish(self) -> None:
        self.last = self._snap()
        self.facts += _facts(self.meter)

    def host_figures(self) -> tuple[dict[str, Any], list[str]]:
        """`validity.host_cpu` and the host-busy warnings over the whole measured window."""
        if self.first is None or self.last is None:
            return {"reason": "n/a: CPU times could not be read"}, []
        usage = cpu.cpu_usage(self.first, self.last, self.server_found)
        usage |= {"cpu_count": cpu.cpu_count(), "server_pids": self.pids if self.server_found else None}
        if not self.server_found:
            usage["server_process"] = f"not subtracted: {self.why_no_server}"
            if _loopback(self.url_host):
                # A local server that could not be found counts as "other": no verdict from it.
                usage["reason"] = "n/a: the server is local but its process was not found"
                return usage, []
        return usage, validity.host_busy(usage)


def _loopback(host: str) -> bool:
    return host in ("localhost", "::1", "0.0.0.0") or host.startswith("127.")


def probe_for(url: str, meter: EnergyMeter | None) -> ValidityProbe | None:
    """A started probe, or None where even that fails (no bench ever fails for its checks)."""
    try:
        return ValidityProbe.start(url, meter)
    except (psutil.Error, OSError):
        return None
