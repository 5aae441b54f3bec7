"""Which variants the run-to-run noise cannot tell apart, and what would (docs/design.md §8 "The pick").

The comparison table marks a cell "≈" when its 95% interval overlaps the baseline's
(core/stats.py `overlaps`); the pick applies the same rule between the variants it chooses from:
the fastest decoder (or the lowest J/token) is chosen only when its interval is apart from every
other candidate's. Where they overlap the line names them as tied, says which of them is smaller
or uses less energy, and how many repeats would likely separate them: each interval's half-width
shrinks as 1/√n, so n runs such that the two half-widths, scaled from the runs made, add up to
less than the difference of the values (Student's t also falls with n, so this errs long), and
the `--target-ci` that asks each phase for half-widths that narrow.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from precmon.report.fmt import format_value
from precmon.report.table import Cell


@dataclass(frozen=True)
class Separation:
    """What would tell two tied cells apart: the runs each would need (None: nothing would, the
    values are equal) and the `--target-ci` percentage that asks for it."""

    runs: int | None
    target_ci_pct: float | None

    def words(self) -> str:
        if self.runs is None or self.target_ci_pct is None:
            return "equal values: no number of repeats would separate them"
        return (
            f"about {self.runs} repeats (--target-ci {self.target_ci_pct:g} --max-repeats {self.runs}) "
            "would likely tell them apart"
        )


def interval(cell: Cell) -> tuple[float, float] | None:
    """The cell's 95% interval of the runs (None without one: fewer than 3 runs, or no statistics)."""
    if cell.value is None or cell.half_width is None or cell.ci95 is None:
        return None
    return cell.ci95


def tied(a: Cell, b: Cell) -> bool:
    """Whether the two cells' 95% intervals overlap: inside the run-to-run noise (the table's ≈)."""
    ia, ib = interval(a), interval(b)
    return ia is not None and ib is not None and ia[0] <= ib[1] and ib[0] <= ia[1]


def separation(a: Cell, b: Cell) -> Separation:
    """The repeats that would likely separate two tied cells (module docstring)."""
    diff = abs((a.value or 0.0) - (b.value or 0.0))
    ha, hb, na, nb = a.half_width or 0.0, b.half_width or 0.0, a.n or 1, b.n or 1
    if diff <= 0.0 or (ha + hb) <= 0.0:
        return Separation(None, None)
    runs = max(na, nb, math.ceil(((ha * math.sqrt(na) + hb * math.sqrt(nb)) / diff) ** 2))
    pct = 100.0 * diff / (abs(a.value or 0.0) + abs(b.value or 0.0))
    return Separation(runs, math.floor(pct * 10) / 10 or 0.1)


def ties_of(best: int, others: Sequence[int], cells: Sequence[Cell]) -> list[int]:
    """The columns among `others` whose cell cannot be told apart from column `best`'s."""
    return [i for i in others if tied(cells[best], cells[i])]


def names(labels: Sequence[str]) -> str:
    """'F16 and Q8_0', 'F16, Q8_0 and Q4_K_M'."""
    return labels[0] if len(labels) == 1 else f"{', '.join(labels[:-1])} and {labels[-1]}"


def least(cols: Sequence[int], cells: Sequence[Cell] | None) -> int | None:
    """The column of `cols` with the lowest value in `cells` (None when none is measured or all
    are equal: nothing to say)."""
    if cells is None:
        return None
    vals = [(cells[i].value, i) for i in cols if cells[i].value is not None]
    if len(vals) < 2 or len({v for v, _ in vals}) == 1:
        return None
    return min(vals, key=lambda p: (p[0], p[1]))[1]


def values(cols: Sequence[int], cells: Sequence[Cell], unit: str) -> str:
    """'553.4 vs 402.1 tok/s', in the order of `cols`."""
    return f"{' vs '.join(format_value(cells[i].value) for i in cols)} {unit}"
