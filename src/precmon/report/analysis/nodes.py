"""Who drew what, in words: the power of a measurement over several machines (`--power-from`).

The usual power rows of such a file are the nodes' sum; these lines say what the sum is made of.
`scope_line` is the report's "Power:" line: this machine's channels, then each other node's
(`host.nodes`), a node without a power source named unmeasured, so a sum short of a machine
never reads as the whole. `node_lines` gives each variant's `power_by_node`: every node's decode,
prefill and idle watts, its share of J/token, and the windows it missed (`node-missing:`).
Strings are the file's; each renderer escapes them for its medium.
"""

from __future__ import annotations

from precmon.core.schema import NodePower, ResultsDoc
from precmon.report.fmt import is_number


def _sources(sources: list) -> str:
    return ", ".join(f"{p.id} ({p.scope})" for p in sources if p.id)


def scope_line(doc: ResultsDoc) -> str:
    """ "Power: …": the channels measured, on every node."""
    local = _sources(doc.host.power_sources)
    nodes = doc.host.nodes or []
    if not nodes:
        return "Power: " + (local or "no power source") + "."
    parts = [f"{doc.host.hostname or 'this machine'} {local}" if local else _unmeasured(doc.host.hostname, None)]
    for n in nodes:
        if n.unmeasured:
            parts.append(_unmeasured(n.name, n.unmeasured))
        elif n.problem:
            parts.append(f"{n.name} unread ({n.problem})")
        else:
            parts.append(
                f"{n.name} {_sources(n.power_sources)} from its {n.exporter or ''} exporter".replace("  ", " ")
            )
    return f"Power: the sum of {len(parts)} nodes: " + "; ".join(parts) + "."


def _unmeasured(name: str | None, why: str | None) -> str:
    return f"{name or 'this machine'} unmeasured ({why or 'no power source'}, not in the sum)"


def _w(x: float | None, unit: str = "W") -> str | None:
    return f"{x:.1f} {unit}" if is_number(x) else None


def node_brief(n: NodePower) -> str:
    """One node of a variant: "spark-b: decode 101.3 W, prefill 140.2 W, idle 40.1 W, 0.62 J/token"."""
    bits = [
        f"{label} {w}"
        for label, x in (("decode", n.power_decode_w), ("prefill", n.power_prefill_w), ("idle", n.power_idle_w))
        if (w := _w(x))
    ]
    if is_number(n.energy_decode_j_per_token):
        bits.append(f"{n.energy_decode_j_per_token:.3g} J/token")
    if n.windows_missing:
        bits.append(f"no power in {n.windows_missing} windows")
    return f"{n.node}: " + (", ".join(bits) if bits else "n/a")


def node_lines(doc: ResultsDoc) -> list[str]:
    """ "Power by node, LABEL: …" for every variant measured over several machines."""
    return [
        f"Power by node, {v.label}: " + "; ".join(node_brief(n) for n in v.power_by_node) + "."
        for v in doc.variants
        if v.power_by_node
    ]
