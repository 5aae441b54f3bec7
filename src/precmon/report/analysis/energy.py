"""Monthly energy and cost of serving at each precision (docs/design.md §4).

kWh per month = average power (W) × hours per day × 30 ÷ 1000. The power is the variant's
measured average under decode load, the state a server spends its busy hours in.
"""

from __future__ import annotations

from dataclasses import dataclass

from precmon.core.metric_keys import KEY
from precmon.core.schema import ResultsDoc
from precmon.report.fmt import is_number

DAYS_PER_MONTH = 30
FULL_DAY_H = 24.0


def monthly_kwh(watts: float, hours_per_day: float = FULL_DAY_H) -> float:
    """kWh per 30-day month at `watts` for `hours_per_day` hours a day."""
    return watts * hours_per_day * DAYS_PER_MONTH / 1000.0


@dataclass(frozen=True)
class MonthlyEnergy:
    """One variant's monthly energy at 24 h/day and at the chosen hours/day."""

    label: str
    watts: float | None  # average power under decode load
    kwh_24h: float | None
    hours_per_day: float | None
    kwh_at_hours: float | None
    price_per_kwh: float | None
    cost_24h: float | None
    cost_at_hours: float | None


def monthly_energy(
    doc: ResultsDoc, hours_per_day: float | None = None, price_per_kwh: float | None = None
) -> list[MonthlyEnergy]:
    """Monthly kWh (and cost, given a price) per variant from `metrics.power_decode_w`."""
    out = []
    for v in doc.variants:
        w = v.metrics.get(KEY.power_decode_w)
        watts = float(w) if is_number(w) else None
        kwh24 = monthly_kwh(watts) if watts is not None else None
        kwh_h = monthly_kwh(watts, hours_per_day) if watts is not None and hours_per_day is not None else None
        out.append(
            MonthlyEnergy(
                label=v.label,
                watts=watts,
                kwh_24h=kwh24,
                hours_per_day=hours_per_day,
                kwh_at_hours=kwh_h,
                price_per_kwh=price_per_kwh,
                cost_24h=kwh24 * price_per_kwh if kwh24 is not None and price_per_kwh is not None else None,
                cost_at_hours=kwh_h * price_per_kwh if kwh_h is not None and price_per_kwh is not None else None,
            )
        )
    return out


def _kwh(x: float) -> str:
    return f"{x:.1f} kWh" if x < 100 else f"{x:.0f} kWh"


def energy_columns(hours_per_day: float | None, price_per_kwh: float | None) -> list[str]:
    """Header of the monthly-energy table for the chosen options."""
    cols = ["Variant", "Decode power", "kWh/month at 24 h/day"]
    if price_per_kwh is not None:
        cols.append(f"Cost at 24 h/day (at {price_per_kwh:g}/kWh)")
    if hours_per_day is not None:
        cols.append(f"kWh/month at {hours_per_day:g} h/day")
        if price_per_kwh is not None:
            cols.append(f"Cost at {hours_per_day:g} h/day")
    return cols


def energy_rows(entries: list[MonthlyEnergy]) -> list[list[str]]:
    """Text cells matching `energy_columns` (same options), "n/a" where power was not measured."""
    rows = []
    for e in entries:
        if e.watts is None or e.kwh_24h is None:
            cells = [e.label, "n/a", "n/a"]
            if e.price_per_kwh is not None:
                cells.append("n/a")
            if e.hours_per_day is not None:
                cells += ["n/a"] + (["n/a"] if e.price_per_kwh is not None else [])
            rows.append(cells)
            continue
        cells = [e.label, f"{e.watts:.1f} W", _kwh(e.kwh_24h)]
        if e.cost_24h is not None:
            cells.append(f"{e.cost_24h:.2f}")
        if e.kwh_at_hours is not None:
            cells.append(_kwh(e.kwh_at_hours))
            if e.cost_at_hours is not None:
                cells.append(f"{e.cost_at_hours:.2f}")
        rows.append(cells)
    return rows


def monthly_energy_lines(
    doc: ResultsDoc, hours_per_day: float | None = None, price_per_kwh: float | None = None
) -> list[str]:
    """One human line per variant, e.g. "FP16: 34.2 W → 24.6 kWh/month at 24 h/day"."""
    lines = []
    for e in monthly_energy(doc, hours_per_day, price_per_kwh):
        if e.watts is None or e.kwh_24h is None:
            lines.append(f"{e.label}: decode power not measured")
            continue
        text = f"{e.label}: {e.watts:.1f} W → {_kwh(e.kwh_24h)}/month at 24 h/day"
        if e.cost_24h is not None:
            text += f" (cost {e.cost_24h:.2f})"
        if e.kwh_at_hours is not None:
            text += f", {_kwh(e.kwh_at_hours)}/month at {e.hours_per_day:g} h/day"
            if e.cost_at_hours is not None:
                text += f" (cost {e.cost_at_hours:.2f})"
        lines.append(text)
    return lines
