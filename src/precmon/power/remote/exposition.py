"""What another node's exporter says about its power, read from its Prometheus text exposition.

Two exporters are understood:

- precmon's own (`precmon exporter`, `watch --prometheus`): `precmon_power_watts` and
  `precmon_energy_joules_total` per source (labels `source`, `scope`, `host`; the counter's
  `method` says whether it is the hardware's or integrated by that exporter from its samples) and
  `precmon_node_info{host}`, the node's name.
- NVIDIA's DCGM exporter: `DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION` (per GPU, millijoules since the
  driver loaded) and `DCGM_FI_DEV_POWER_USAGE` (per GPU, watts), named by `Hostname`. The node's
  GPUs are added up into one reading: a model served over them draws on all of them.

The body is another machine's bytes: only the lines of the families above are parsed (by
prometheus_client's parser), label values are made visible (`untrusted.visible`) and cut short,
and a reading that is not a finite number counts as none.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from prometheus_client.parser import text_string_to_metric_families

from precmon.untrusted import visible

from ..base import SCOPES

PRECMON, DCGM = "precmon", "dcgm"
WATTS = "precmon_power_watts"
JOULES = "precmon_energy_joules_total"
NODE_INFO = "precmon_node_info"
DCGM_ENERGY_MJ = "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION"
DCGM_WATTS = "DCGM_FI_DEV_POWER_USAGE"
_WANTED = (WATTS, JOULES, NODE_INFO, DCGM_ENERGY_MJ, DCGM_WATTS)
_PREFIXES = tuple(f"{n}{end}" for n in _WANTED for end in ("{", " "))
NAME_LIMIT = 64  # characters of a node or source name from a label


class ExpositionError(ValueError):
    """The body is not a Prometheus exposition this module can read; str() says why, in one line."""


@dataclass(frozen=True)
class Reading:
    """One power channel of the node in one exposition."""

    source: str  # the exporter's id of it (precmon's `source` label; "dcgm:gpus" for DCGM's sum)
    scope: str
    watts: float | None = None
    energy_j: float | None = None
    method: str | None = None  # the exporter's `method` of the energy counter (counter | integrated)


@dataclass(frozen=True)
class Exposition:
    """What one read said: the exporter, the node's name as it gives it, its power channels."""

    exporter: str | None  # None: neither precmon's nor DCGM's families are there
    name: str | None
    readings: dict[str, Reading] = field(default_factory=dict)
    gpus: int = 0  # DCGM: GPUs added up


def _label(value: object) -> str:
    return visible(value, limit=NAME_LIMIT)


def _finite(x: float) -> float | None:
    return x if math.isfinite(x) else None


def parse(text: str) -> Exposition:
    """The node's power channels from an exposition (ExpositionError when it cannot be parsed)."""
    lines = [line for line in text.splitlines() if line.startswith(_PREFIXES)]
    series: dict[str, list[tuple[dict[str, str], float]]] = {}
    try:
        for fam in text_string_to_metric_families("\n".join(lines) + "\n"):
            for s in fam.samples:
                series.setdefault(s.name, []).append((dict(s.labels), float(s.value)))
    except (ValueError, TypeError, IndexError) as exc:  # the parser's ways of saying "not the format"
        raise ExpositionError(f"not a Prometheus exposition: {visible(exc, limit=120)}") from exc
    if WATTS in series or JOULES in series or NODE_INFO in series:
        return _precmon(series)
    if DCGM_ENERGY_MJ in series or DCGM_WATTS in series:
        return _dcgm(series)
    return Exposition(None, None)


def _precmon(series: dict[str, list[tuple[dict[str, str], float]]]) -> Exposition:
    scopes: dict[str, str] = {}
    watts: dict[str, float | None] = {}
    energy: dict[str, tuple[float | None, str]] = {}
    name = next((_label(labels["host"]) for labels, _ in series.get(NODE_INFO, []) if labels.get("host")), None)
    for metric in (WATTS, JOULES):
        for labels, value in series.get(metric, []):
            source = _label(labels.get("source", ""))
            if not source:
                continue
            scopes.setdefault(source, labels.get("scope", ""))
            if metric == WATTS:
                watts[source] = _finite(value)
            else:  # an exporter from before `method` exported the hardware's counters only
                energy[source] = (_finite(value), _label(labels.get("method") or "counter"))
            name = name or (_label(labels["host"]) if labels.get("host") else None)
    readings = {
        source: Reading(
            source,
            scope if scope in SCOPES else "rail",
            watts.get(source),
            energy[source][0] if source in energy else None,
            energy[source][1] if source in energy else None,
        )
        for source, scope in scopes.items()
    }
    return Exposition(PRECMON, name, readings)


def _dcgm(series: dict[str, list[tuple[dict[str, str], float]]]) -> Exposition:
    """DCGM's GPUs as one reading: each GPU's counter (mJ) and watts, added up; a GPU whose value
    is missing or not finite makes the sum None (a sum short of a GPU would read low, and right)."""
    per_gpu: dict[str, dict[str, float | None]] = {}
    name = None
    for metric, key, scale in ((DCGM_ENERGY_MJ, "energy_j", 1e-3), (DCGM_WATTS, "watts", 1.0)):
        for labels, value in series.get(metric, []):
            gpu = labels.get("UUID") or labels.get("gpu") or labels.get("device") or ""
            x = _finite(value)
            per_gpu.setdefault(gpu, {})[key] = None if x is None else x * scale
            name = name or (_label(labels["Hostname"]) if labels.get("Hostname") else None)

    def total(key: str, metric: str) -> float | None:
        if metric not in series:
            return None
        values = [g.get(key) for g in per_gpu.values()]
        return None if any(v is None for v in values) else sum(v for v in values if v is not None)

    reading = Reading(
        "dcgm:gpus",
        "gpu",
        total("watts", DCGM_WATTS),
        total("energy_j", DCGM_ENERGY_MJ),
        "counter" if DCGM_ENERGY_MJ in series else None,
    )
    return Exposition(DCGM, name, {reading.source: reading}, gpus=len(per_gpu))
