"""What the Power panel and watch mode show about power, as one frozen value: `PowerSnapshot`.

`power_snapshot` reads a sampler into rows; it runs in the power worker's thread, since the
sampler's lock and history copy must not block painting. The worker posts the snapshot
(`messages.PowerSampled`), the app keeps it in its `power` reactive, and the Power panel and the
watch view, bound to it, draw it. Plain Python, no textual.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from precmon.power.base import SCOPE_RANK, Channel, EnergyMeter, Node, NodesMeter, Sample, Unavailable
from precmon.power.windows import headline_now
from precmon.tui.run_trace import watts_per_second


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


def power_snapshot(
    meter: EnergyMeter | None, unavailable: list[Unavailable], history_s: float = 120.0, note: str | None = None
) -> PowerSnapshot:
    """One snapshot of every channel (newest watts, recent history, extras) and every absence."""
    rows: list[PowerRow] = []
    errors: dict[str, str] = {}
    headline = None
    per_s: tuple[tuple[int, float], ...] = ()
    per_s_label: str | None = None
    if meter is not None:
        latest = meter.latest()
        errors = dict(meter.errors())
        every = sorted(meter.channels(), key=lambda c: (not c.has_watts, SCOPE_RANK.get(c.scope, 99), c.id))
        chans = [c for c in every if c.node is None]  # another node's: one row per node, below
        headline = headline_now(chans, latest)
        for ch in chans:
            s = latest.get(ch.id)
            watts = s.watts if s is not None else None
            hist: tuple[float, ...] = ()
            if ch.has_watts:
                samples = meter.history(ch.id, history_s)
                hist = tuple(x.watts for x in samples if x.watts is not None)
                if headline is not None and ch.id == headline[0].id:
                    per_s, per_s_label = watts_per_second(samples), ch.label
            rows.append(
                PowerRow(
                    ch.id,
                    ch.label,
                    ch.kind,
                    ch.scope,
                    watts,
                    hist,
                    dict(s.extra) if s is not None else {},
                    ch.has_watts,
                    ch.note,
                )
            )
    if isinstance(meter, NodesMeter):
        rows.extend(
            node_row(meter, n, [c for c in every if c.node == n.name], latest, history_s) for n in meter.nodes()
        )
    for u in unavailable:
        rows.append(
            PowerRow(
                u.id or u.kind, u.label or u.kind, u.kind, None, None, available=False, reason=u.reason, has_watts=False
            )
        )
    return PowerSnapshot(
        tuple(rows),
        headline[1] if headline else None,
        headline[0].scope if headline else None,
        errors,
        note,
        per_s,
        per_s_label,
    )


def node_row(
    meter: EnergyMeter, node: Node, chans: list[Channel], latest: dict[str, Sample], history_s: float
) -> PowerRow:
    """Another node's row (`--power-from`): its headline channel's newest watts and history, or why
    there are none (it did not answer at start; it answered without a power source)."""
    why = node.problem or (f"unmeasured: {node.unmeasured}" if node.unmeasured else None)
    if why is not None or not chans:
        return PowerRow(
            f"node:{node.name}", node.name, "node", None, None, available=False, reason=why, has_watts=False
        )
    now = headline_now(chans, latest)
    ch, watts = now if now is not None else (chans[0], None)
    hist = tuple(x.watts for x in meter.history(ch.id, history_s) if x.watts is not None)
    note = f"{node.exporter or 'exporter'}: {ch.label.split(': ', 1)[-1]}"
    return PowerRow(ch.id, node.name, "node", ch.scope, watts, hist, {}, True, note)
