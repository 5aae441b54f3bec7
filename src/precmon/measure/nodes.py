"""Who drew what: a measurement's power over several machines (`--power-from`, docs/design.md §8 "Fleet").

Each phase window's figure is the nodes' sum (power/fleet.py); this module keeps each node's part
beside it: in a run (`extra.power_by_node`, `extra.nodes_missing`), in the idle window
(`power_idle.by_node`) and, by the summary, per variant (`power_by_node`, one `NodePower` per node,
this machine first) with one `node-missing:` warning per node that failed a window. A window a
node missed has no summed figure (its `power_w` and `energy_j` are null), so the variant's medians
are made of whole sums only; the warning says how many windows that cost.
"""

from __future__ import annotations

import socket
from collections.abc import Iterable
from typing import Any

from precmon.core.phases import DECODE, IDLE, PREFILL
from precmon.core.schema import NodePower, Run, VariantResult
from precmon.core.stats import median
from precmon.core.warning_codes import NODE_MISSING
from precmon.power.base import EnergyMeter, NodesMeter
from precmon.power.fleet import Fleet

__all__ = ["NODE_MISSING", "expected_nodes", "local_name", "parts", "summarize_nodes", "urls"]


def local_name() -> str:
    """This machine's name in `power_by_node`: its hostname, as `host.hostname` has it."""
    return socket.gethostname()


def expected_nodes(meter: EnergyMeter) -> list[str | None]:
    """The nodes whose windows a phase's sum needs: this machine (None) where it has a channel
    with watts, then every other node that has power (`Node.expected`), in the order given."""
    local: list[str | None] = [None] if any(c.has_watts and c.node is None for c in meter.channels()) else []
    others = [n.name for n in meter.nodes() if n.expected] if isinstance(meter, NodesMeter) else []
    return local + list(others)


def urls(meter: EnergyMeter | None) -> dict[str, str]:
    """Node name → its exporter's URL (credentials redacted)."""
    return {n.name: n.url for n in meter.nodes()} if isinstance(meter, NodesMeter) else {}


def parts(f: Fleet, duration_s: float, addresses: dict[str, str]) -> list[dict[str, Any]]:
    """A window's `power_by_node`: each node's watts and its energy over `duration_s` (the summed
    window's, so that the parts add up to the sum), its channel and method, and for another node
    how far its edges may be off (`edge_ms`)."""
    out = []
    for node, w in f.by_node.items():
        part: dict[str, Any] = {
            "node": node or local_name(),
            "power_w": round(w.avg_watts, 3),
            "energy_j": round(w.avg_watts * duration_s, 4),
            "method": w.method,
            "channel": w.channel_id,
        }
        if node is not None:
            part["url"] = addresses.get(node)
            part["edge_ms"] = round(1000 * (w.edge_s or 0.0), 2)
        out.append(part)
    return out


def _number(part: Any, key: str) -> float | None:
    x = part.get(key) if isinstance(part, dict) else None
    return float(x) if isinstance(x, (int, float)) and not isinstance(x, bool) else None


def _tokens(run: Run) -> int | None:
    return run.extra.energy_tokens if run.extra.energy_tokens is not None else run.output_tokens


class _Node:
    """One node's figures gathered over a variant's windows."""

    def __init__(self, name: str) -> None:
        self.name, self.url = name, None
        self.idle_w: float | None = None
        self.idle_j: float | None = None
        self.decode_w: list[float] = []
        self.decode_jpt: list[float] = []
        self.decode_j = 0.0
        self.prefill_j = self.prefill_s = 0.0
        self.missing: dict[str, int] = {}
        self.edge_ms: float | None = None

    def add(self, phase: str, part: dict[str, Any], run: Run | None) -> None:
        self.url = self.url or part.get("url")
        w, j = _number(part, "power_w"), _number(part, "energy_j")
        if (edge := _number(part, "edge_ms")) is not None:
            self.edge_ms = max(self.edge_ms or 0.0, edge)
        if w is None or j is None:
            return
        if phase == IDLE:
            self.idle_w, self.idle_j = w, j
        elif phase == DECODE and run is not None:
            self.decode_w.append(w)
            self.decode_j += j
            if (tokens := _tokens(run)) and tokens > 0:
                self.decode_jpt.append(j / tokens)
        elif phase == PREFILL and w > 0:
            self.prefill_j += j
            self.prefill_s += j / w

    def record(self) -> NodePower:
        dec_w, dec_jpt = median(self.decode_w), median(self.decode_jpt)
        return NodePower(
            node=self.name,
            url=self.url,
            power_idle_w=self.idle_w,
            power_decode_w=None if dec_w is None else round(dec_w, 2),
            power_prefill_w=round(self.prefill_j / self.prefill_s, 2) if self.prefill_s > 0 else None,
            energy_decode_j_per_token=None if dec_jpt is None else round(dec_jpt, 5),
            energy_idle_j=self.idle_j,
            energy_decode_j=round(self.decode_j, 3) if self.decode_w else None,
            energy_prefill_j=round(self.prefill_j, 3) if self.prefill_s > 0 else None,
            windows_missing=sum(self.missing.values()) or None,
            edge_ms=self.edge_ms,
        )


def _windows(res: VariantResult) -> Iterable[tuple[str, Any, list[str], Run | None]]:
    """(phase, power_by_node, nodes_missing, run) of every window that had several nodes."""
    idle = res.power_idle
    if idle is not None and (idle.by_node or idle.nodes_missing):
        yield IDLE, idle.by_node or [], idle.nodes_missing or [], None
    for r in res.runs:
        if r.ok and (r.extra.power_by_node or r.extra.nodes_missing):
            yield r.phase, r.extra.power_by_node or [], r.extra.nodes_missing or [], r


def summarize_nodes(res: VariantResult) -> list[str]:
    """Set `res.power_by_node` from its windows (None where no window had several nodes); returns
    the `node-missing:` warnings, one per node that missed a window."""
    nodes: dict[str, _Node] = {}
    total = 0
    for phase, by_node, missing, run in _windows(res):
        total += 1
        for part in by_node if isinstance(by_node, list) else []:
            if isinstance(part, dict) and isinstance(part.get("node"), str):
                nodes.setdefault(part["node"], _Node(part["node"])).add(phase, part, run)
        for name in missing:
            n = nodes.setdefault(name, _Node(name))
            n.missing[phase] = n.missing.get(phase, 0) + 1
    res.power_by_node = [n.record() for n in nodes.values()] or None
    warnings = []
    for n in nodes.values():
        if n.missing:
            k = sum(n.missing.values())
            where = ", ".join(f"{phase} {count}" for phase, count in n.missing.items())
            warnings.append(
                f"{NODE_MISSING} {n.name} gave no power in {k} of {total} windows ({where}): "
                "no summed watts or J/token for those (it stopped answering, or its counters stood still)"
            )
    return warnings
