"""Several machines' windows as one figure: each node's headline window, summed.

A model served over two DGX Sparks (vLLM on Ray) draws power on both; J/token from one of them
reads about half of what the answer cost. With `--power-from URL` every other node is a power
source of the sampler (power/remote/), so one phase gives windows of every node. This module
makes the phase's figure of them: per node the headline window (the one rule of windows.py:
widest scope, then a counter, then the larger power), and the sum of those.

A sum that silently lost a term would read low and look right, so the sum is made only when
every node expected gave its window: a node that stopped answering, or answered with counters
that did not move, makes `total` None and is named in `missing` (the measurement layer turns
that into a `node-missing:` warning). A node without any power source is not expected: the
results name it unmeasured instead (`Node.unmeasured`).

Each node's watts are averaged over its own window, whose edges are its exporter's reads (a
round trip off this machine's edges, `EnergyWindow.edge_s`), so the sum adds watts and takes its
energy over this machine's duration, the window the tokens were counted in.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from .base import Channel, EnergyWindow, Sample
from .windows import headline, headline_now


@dataclass(frozen=True)
class Fleet:
    """One phase's power over every node.

    Attributes:
        total: the summed window (the headline window itself where this machine is the only
            node); None when no node gave a window, or when a node expected gave none.
        by_node: each node's headline window, this machine's under None, in `expected` order.
        missing: the nodes expected that gave no window (None: this machine's sources).
    """

    total: EnergyWindow | None
    by_node: dict[str | None, EnergyWindow] = field(default_factory=dict)
    missing: tuple[str | None, ...] = ()

    @property
    def several(self) -> bool:
        """Whether other nodes take part (results then carry `power_by_node`)."""
        return any(node is not None for node in self.by_node) or bool(self.missing)


def fleet(windows: Iterable[EnergyWindow], expected: Sequence[str | None] = (None,)) -> Fleet:
    """The phase's figure from every channel's window.

    Args:
        windows: one per channel with watts, of every node (`EnergyMeter.end`).
        expected: the nodes whose windows the sum needs (None: this machine), in the order
            results list them; only this machine: the headline window, as before nodes existed.
    """
    windows = list(windows)
    if all(node is None for node in expected):
        w = headline(windows)
        return Fleet(w, {None: w} if w is not None else {})
    by_node: dict[str | None, EnergyWindow] = {}
    for node in expected:
        w = headline(x for x in windows if x.node == node)
        if w is not None:
            by_node[node] = w
    missing = tuple(n for n in expected if n not in by_node)
    return Fleet(None if missing else summed(list(by_node.values())), by_node, missing)


def summed(parts: Sequence[EnergyWindow]) -> EnergyWindow | None:
    """One window of several nodes' headline windows: their watts added, over the first's
    duration (this machine's, where it is a node). None without a part."""
    if not parts:
        return None
    first = parts[0]
    watts = sum(w.avg_watts for w in parts)
    if not math.isfinite(watts):
        return None
    edges = [w.edge_s for w in parts if w.edge_s is not None]
    return EnergyWindow(
        "+".join(w.channel_id for w in parts),
        first.scope,
        first.phase,
        first.duration_s,
        watts * first.duration_s,
        watts,
        None,  # the nodes' peaks need not coincide: their sum is no peak
        "counter" if all(w.method == "counter" for w in parts) else "integrated",
        sum(w.n_samples for w in parts),
        start_s=first.start_s,
        edge_s=max(edges) if edges else None,
    )


def total_now(
    channels: Iterable[Channel], latest: Mapping[str, Sample], expected: Sequence[str | None] = (None,)
) -> float | None:
    """The live counterpart of a phase's sum (the sweep's cool-down wait compares it with the
    idle window's): each node's newest headline watts (`headline_now`), added; None when a node
    expected has none."""
    chans = list(channels)
    total = None
    for node in expected:
        now = headline_now([c for c in chans if c.node == node], latest)
        if now is None:
            return None
        total = (total or 0.0) + now[1]
    return total


def edge_covered(w: EnergyWindow, ch: Channel, t_begin: float, t_end: float, wait_s: float) -> bool:
    """Whether a closed window may count. This machine's always may. Another node's only where
    its first reading is the begin edge's (asked for at `t_begin`, in by the sampler's `wait_s`),
    its last the end edge's (asked for at `t_end`), and, where the node keeps an energy counter,
    the counter moved: one that did not (an exporter serving what it read long ago, DCGM's
    collection interval longer than the window) is stale, not zero."""
    if ch.node is None:
        return True
    if w.start_s is None or not t_begin <= w.start_s <= t_begin + wait_s:
        return False
    if w.start_s + w.duration_s < t_end:
        return False
    return not ch.has_energy_counter or w.method == "counter"
