"""Messages the TUI's thread workers post to the app: each named for what happened.

Workers never touch widgets; they call the headless layers and post one of these. The classes
are grouped by the worker that sends them (`Power.Sampled` comes from the power worker,
`Server.Probed` from the server watcher, `Measure.EventArrived` from a bench or sweep), the
way posting nests `MethodSelector.MethodChanged` in its sender.

High-rate messages override `can_replace`: when the event loop is busy, a queue of stale
power ticks or progress lines folds into the newest one, so the UI never lags the data.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from textual.message import Message

from precmon.sweep.events import Progress


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


class Power:
    """Messages of the power worker."""

    class Sampled(Message):
        """A new power snapshot (posted at the repaint rate, 4 Hz)."""

        def __init__(self, snapshot: PowerSnapshot) -> None:
            super().__init__()
            self.snapshot = snapshot

        def can_replace(self, message: Message) -> bool:
            return isinstance(message, Power.Sampled)


class Server:
    """Messages of the server watcher (health, model facts, passive /metrics) and the driver."""

    class Probed(Message):
        """The server answered (or did not); `error` is the one-line reason when it did not."""

        def __init__(
            self,
            url: str,
            healthy: bool,
            kind: str | None = None,
            version: str | None = None,
            model: str | None = None,
            quantization: str | None = None,
            models: tuple[str, ...] = (),
            error: str | None = None,
        ) -> None:
            super().__init__()
            self.url, self.healthy, self.kind, self.version = url, healthy, kind, version
            self.model, self.quantization, self.models, self.error = model, quantization, models, error

        def can_replace(self, message: Message) -> bool:
            return isinstance(message, Server.Probed)

    class Discovered(Message):
        """What a look at the usual local ports found (started without --url): doctor entries."""

        def __init__(self, entries: list[dict[str, Any]], error: str | None = None) -> None:
            super().__init__()
            self.entries, self.error = entries, error

    class MetricsScraped(Message):
        """Rates between the last two `/metrics` scrapes (`rates` is a LiveRates or None)."""

        def __init__(self, rates: Any | None, error: str | None = None, j_per_token: float | None = None) -> None:
            super().__init__()
            self.rates, self.error, self.j_per_token = rates, error, j_per_token

        def can_replace(self, message: Message) -> bool:
            return isinstance(message, Server.MetricsScraped)

    class DriveMeasured(Message):
        """One request of `--drive`'s steady load was measured (a real, validated Run)."""

        def __init__(self, run: Any, watts: float | None, j_per_token: float | None, error: str | None = None) -> None:
            super().__init__()
            self.run, self.watts, self.j_per_token, self.error = run, watts, j_per_token, error


class Measure:
    """Messages of a bench (`b`) or sweep (`s`) worker: the sweep layer's events, wrapped."""

    class EventArrived(Message):
        """One `precmon.sweep.events` event; `source` is "bench" or "sweep"."""

        def __init__(self, event: Any, source: str) -> None:
            super().__init__()
            self.event, self.source = event, source

        def can_replace(self, message: Message) -> bool:
            # Only progress lines collapse; a landed run or a finished variant is never dropped.
            return (
                isinstance(message, Measure.EventArrived)
                and isinstance(message.event, Progress)
                and isinstance(self.event, Progress)
            )

    class Planned(Message):
        """A sweep's plan is known: its variants (label, precision, model) and results folder."""

        def __init__(self, spec: Any, out_dir: Any) -> None:
            super().__init__()
            self.spec, self.out_dir = spec, out_dir

    class Ended(Message):
        """The bench or sweep worker returned; `error` when it could not run at all."""

        def __init__(self, source: str, error: str | None = None, results_path: Any = None) -> None:
            super().__init__()
            self.source, self.error, self.results_path = source, error, results_path

    class Exported(Message):
        """An export finished: the folder and the files written (or the error)."""

        def __init__(self, folder: Any, files: tuple[str, ...], error: str | None = None) -> None:
            super().__init__()
            self.folder, self.files, self.error = folder, files, error
