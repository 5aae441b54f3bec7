"""What the power worker hands the Power panel: rows prepared off the event loop.

The messages themselves are nested in the worker that sends them (`PowerWorker.Sampled`,
`ServerWorker.Probed`, `MeasureWorker.EventArrived`), the way posting nests
`MethodSelector.MethodChanged` in its sender; these plain dataclasses are what they carry, kept
here so `precmon.tui.live` builds them without importing a worker.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class PowerRow:
    """One line of the Power panel, prepared in the worker thread (no I/O on the event loop)."""

    channel_id: str
    label: str
    kind: str
    scope: str | None
    watts: float | None
    history_w: tuple[float, ...] = ()
    extra: dict[str, float] = field(default_factory=dict)
    has_watts: bool = True
    note: str = ""
    available: bool = True
    reason: str | None = None


@dataclass(frozen=True)
class PowerSnapshot:
    """Everything the Power panel and the watch view show about power at one instant."""

    rows: tuple[PowerRow, ...]
    headline_w: float | None  # watts of the widest-scope channel with watts
    headline_scope: str | None
    errors: dict[str, str] = field(default_factory=dict)
    note: str | None = None  # e.g. "power sampling failed to start: ..."
    headline_per_s: tuple[tuple[int, float], ...] = ()  # (monotonic second, mean W) of the headline channel
    headline_label: str | None = None
