"""What a concurrency run's recorded figures mean (docs/design.md §4 "Concurrency"): how many
streams it ran, how many requests the server said it runs at once, and which levels of a curve
are on its Pareto front.

measure/concurrency/ records the figures and makes the curve; the report reads files (older ones
too) with the same rules, so they live here and neither restates them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from precmon.core.schema.model import Run

#: Scrapes of a server's running-requests gauge inside a window before its largest reading is
#: trusted as the requests the server runs at once (a shorter window may not have seen them all).
MIN_SCRAPES = 3
#: The Pareto axes: (field of a level, better).
AXES = (("per_user_tok_s", "higher"), ("total_tok_s", "higher"), ("energy_j_per_token", "lower"))


def stream_count(run: Run) -> int | None:
    """The stream count of a concurrency run: `extra.streams`; older files: `extra.concurrency`,
    then the run's own `concurrency`."""
    return next((n for n in (run.extra.streams, run.extra.concurrency, run.concurrency) if n is not None), None)


def capacity(observed: Mapping[str, Any] | None) -> tuple[int | None, str]:
    """(requests the server runs at once, where that comes from) from `extra.server_parallel`;
    (None, why) when neither `total_slots` nor enough scrapes of the running gauge say."""
    obs = observed if isinstance(observed, Mapping) else {}
    slots = obs.get("total_slots")
    if isinstance(slots, int) and not isinstance(slots, bool) and slots >= 1:
        return slots, "/props total_slots"
    running, scrapes = obs.get("max_running"), obs.get("scrapes")
    if isinstance(running, (int, float)) and isinstance(scrapes, int) and scrapes >= MIN_SCRAPES and running >= 1:
        return int(running), f"most requests running at once in /metrics over {scrapes} scrapes"
    return None, str(obs.get("reason") or "the server did not say")


def _num(x: Any) -> float | None:
    return float(x) if isinstance(x, (int, float)) and not isinstance(x, bool) else None


def pareto_front(levels: Mapping[str, Mapping[str, Any]]) -> set[str]:
    """The levels no other level beats on every axis (per-user and total tok/s higher, J/token
    lower) while being strictly better on one. An axis counts only where every level compared has
    a value for it (J/token is n/a without power); a level without per-user and total tok/s is
    never on the front."""
    usable = {lv: f for lv, f in levels.items() if all(_num(f.get(a)) is not None for a, _ in AXES[:2])}
    axes = [(a, b) for a, b in AXES if all(_num(f.get(a)) is not None for f in usable.values())]

    def score(f: Mapping[str, Any]) -> list[float]:
        return [(v if better == "higher" else -v) for a, better in axes if (v := _num(f.get(a))) is not None]

    scores = {lv: score(f) for lv, f in usable.items()}

    def dominates(a: list[float], b: list[float]) -> bool:
        return all(x >= y for x, y in zip(a, b, strict=True)) and any(x > y for x, y in zip(a, b, strict=True))

    return {lv for lv, s in scores.items() if not any(dominates(o, s) for k, o in scores.items() if k != lv)}
