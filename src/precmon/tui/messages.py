"""Every message the TUI's workers post to the app, in one place, as dataclasses.

Named for what happened (`ServerProbed`, `RunLanded` arrives as a `SweepEventArrived`); the app
turns each into its reactive state (`PrecmonApp.power`, `server_view`, `results`, `measuring`)
that the widgets bind to. The messages that come at a steady rate collapse (`can_replace`, as
toolong's do): a queue of stale power snapshots, probes, scrapes, live reads or progress lines
folds into the newest one, so the screen never lags the data; a landed run, a finished variant
or a `--drive` measurement is never dropped. Workers post them from their own threads
(`App.post_message` is thread-safe).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from textual.message import Message

from precmon.core.schema import Run
from precmon.servers.watch.live_rate import LiveRate
from precmon.servers.watch.metrics import LiveRates
from precmon.servers.watch.snapshot import ServerSnapshot
from precmon.sweep.events import Progress, SweepEvent
from precmon.sweep.spec import SweepSpec
from precmon.tui.power_view import PowerSnapshot

# ---- the power worker ---------------------------------------------------------------------------


@dataclass
class PowerSampled(Message):
    """A new power snapshot (posted once a refresh, and only when it changed)."""

    snapshot: PowerSnapshot

    def can_replace(self, message: Message) -> bool:
        return isinstance(message, PowerSampled)


# ---- the server worker --------------------------------------------------------------------------


@dataclass
class ServerProbed(Message):
    """A health check: the server answered, with its facts (or did not: `snapshot.error` says
    why, in one line). The live rate and /metrics rates follow at the poll rate, in their own
    messages."""

    snapshot: ServerSnapshot

    def can_replace(self, message: Message) -> bool:
        return isinstance(message, ServerProbed)


@dataclass
class ServersDiscovered(Message):
    """What a look at the usual local ports found (started without --url): doctor entries."""

    entries: list[dict[str, Any]]
    error: str | None = None


@dataclass
class MetricsScraped(Message):
    """Rates between the last two `/metrics` scrapes (None: none yet, or `error` says why)."""

    rates: LiveRates | None
    error: str | None = None

    def can_replace(self, message: Message) -> bool:
        return isinstance(message, MetricsScraped)


@dataclass
class LiveRateRead(Message):
    """Generated tok/s right now, all clients (a `LiveRate`: a number, or why none).

    `jpt_closed`: watch mode's J/token window ended with this poll, and `j_per_token` is its
    value (None: n/a); between window ends the J/token shown stays as it is."""

    rate: LiveRate
    j_per_token: float | None = None
    jpt_closed: bool = True

    def can_replace(self, message: Message) -> bool:
        return isinstance(message, LiveRateRead)


@dataclass
class DriveMeasured(Message):
    """One request of `--drive`'s steady load was measured (a real, validated Run)."""

    run: Run
    watts: float | None
    j_per_token: float | None


@dataclass
class DriveStopped(Message):
    """`--drive` failed: why, how many requests in a row since when (`since_unix_s`: the
    first of them), and in how many seconds it tries again."""

    error: str
    failures: int
    retry_in_s: float
    since_unix_s: float = field(default_factory=time.time)


# ---- the measure worker -------------------------------------------------------------------------


@dataclass
class SweepEventArrived(Message):
    """One `precmon.sweep.events` event of a bench or sweep; `source` is "bench" or "sweep"."""

    event: SweepEvent
    source: str

    def can_replace(self, message: Message) -> bool:
        # Only progress lines collapse; a landed run or a finished variant is never dropped.
        return (
            isinstance(message, SweepEventArrived)
            and isinstance(message.event, Progress)
            and isinstance(self.event, Progress)
        )


@dataclass
class PreflightFound(Message):
    """The box checked before a bench or sweep has findings (docs/design.md §4 "Preflight"): the
    app asks whether to measure anyway and hands the answer to `answer` (the waiting worker)."""

    findings: list[str]
    source: str  # "bench" | "sweep"
    answer: Callable[[bool], None]


@dataclass
class SweepPlanned(Message):
    """A sweep's plan is known: its variants (label, precision, model) and results folder."""

    spec: SweepSpec
    out_dir: Path


@dataclass
class MeasureEnded(Message):
    """The bench or sweep returned; `error` when it failed; `results_path` where it was saved."""

    source: str
    error: str | None = None
    results_path: Path | None = None


@dataclass
class Exported(Message):
    """An export finished: the folder and the files written (or the error)."""

    folder: Path
    files: tuple[str, ...]
    error: str | None = None
