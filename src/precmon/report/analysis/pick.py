"""The one-line pick: the fastest decoder within a quality budget, and the least J/token in it.

"Pick NVFP4: fastest decode within KL ≤ 0.05 (Q4_K_M also within, 3% slower); lowest J/token
within the budget: Q4_K_M (1.63 J/token)." The budget is a mean KL in nats against the quality
baseline: the settings table's `max_kld` row (core/settings.py REPORT: `--max-kld` of every
command that measures or reports, sweep key `max_kld`, kept in the results' `settings`; default
0.05, the edge of the "small" band in analysis/quality_bands.py). Only a variant whose quality
was judged counts: where no variant but the baseline could be judged, nothing is picked and the
line says why and what to do. The baseline itself (KL 0 by definition) is always within. The
run-to-run noise decides too (analysis/ties.py, the table's ≈ rule): where the fastest one's
decode interval overlaps another candidate's, nothing is picked: the line names them as tied,
which is smaller or uses less energy, and how many repeats would likely tell them apart; the same
for the lowest J/token. Exact ties without intervals (fewer than three runs) go to the lower KL,
then to the column order, and the line names the tie. Documents that scored no quality get no line.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from precmon.core import settings
from precmon.core.metric_keys import KEY
from precmon.core.schema import ResultsDoc
from precmon.report.analysis import ties as noise
from precmon.report.analysis.quality_bands import Measured, measured
from precmon.report.fmt import format_value
from precmon.report.table import Cell, ComparisonTable

#: The default budget: the `max_kld` row's, the "small" band's KL edge (a test holds them equal).
DEFAULT_MAX_KLD_NATS: float = settings.BY_NAME["max_kld"].default


def budget(doc: ResultsDoc, given: float | None = None) -> float:
    """The budget a reader judges `doc` by: `given` (`report --max-kld`), else the document's
    `settings.max_kld` (the sweep's or bench's), else the default."""
    return float(settings.judged_by("max_kld", doc.settings, given))


@dataclass(frozen=True)
class Pick:
    """The chosen variant's label (None: nothing picked), the line that says it, and the line's
    first clause alone (the TUI's table border: "Pick Q4_K_M: fastest decode within KL ≤ 0.05")."""

    choice: str | None
    line: str

    @property
    def short(self) -> str:
        """The line up to its first bracket or semicolon: "No pick within KL ≤ 0.05: quality cannot be judged"."""
        return self.line.split(" (", 1)[0].split(";", 1)[0].rstrip(".")


@dataclass(frozen=True)
class _Split:
    """The columns within the budget, the labels over it ("Q4_0 0.0720"), why nothing can be picked
    (or ""), and the clause naming the variants never considered (or "")."""

    inside: list[int]
    over: list[str]
    why: str = ""
    passed: str = ""


def _within(doc: ResultsDoc, t: ComparisonTable, max_kld: float) -> _Split:
    """Split the columns that did not fail: the baseline (KL 0 by definition, its own figures
    scored or not) and the judged variants within the budget are in, judged ones over it out,
    and the others — quality that cannot be judged, or not scored — are named, never silently left out."""
    variants = doc.variants
    ran = [i for i, c in enumerate(t.columns) if c.status != "failed"]
    quality = {i: q for i in ran if i < len(variants) and (q := measured(variants[i])) is not None}
    baselines = {q.baseline for q in quality.values()}
    base = [i for i in ran if t.columns[i].label in baselines]
    judged = {i: q for i, q in quality.items() if i not in base and q.verdict().judged}
    passed = [i for i in ran if i not in base and i not in judged]
    if not judged:
        first = next((quality[i] for i in passed if i in quality), None)
        why = first.verdict() if first is not None else None
        reason = f"{why.why}; {why.todo}" if why is not None and not why.judged else "no variant but the baseline"
        return _Split([], [], f"quality cannot be judged ({reason})")
    inside = base + [i for i, q in judged.items() if q.kld_mean_nats <= max_kld]
    over = [f"{t.columns[i].label} {format_value(q.kld_mean_nats)}" for i, q in judged.items() if i not in inside]
    return _Split(sorted(inside), over, "", _not_considered(t, passed, quality))


def _not_considered(t: ComparisonTable, cols: list[int], quality: dict[int, Measured]) -> str:
    """'; not considered: Q4_0, MXFP4 (quality cannot be judged), Q2_K (quality not scored)', or ""."""
    groups: dict[str, list[str]] = {}
    for i in cols:
        why = "quality cannot be judged" if i in quality else "quality not scored"
        groups.setdefault(why, []).append(t.columns[i].label)
    named = ", ".join(f"{', '.join(labels)} ({why})" for why, labels in groups.items())
    return f"; not considered: {named}" if named else ""


def pick_line(doc: ResultsDoc, t: ComparisonTable, max_kld: float = DEFAULT_MAX_KLD_NATS) -> Pick:
    """The pick within mean KL ≤ `max_kld` nats (module docstring); Pick(None, "") without quality."""
    if not any(measured(v) is not None for v in doc.variants):
        return Pick(None, "")
    budget = f"KL ≤ {max_kld:g}"
    split = _within(doc, t, max_kld)
    inside, over, passed = split.inside, split.over, split.passed
    if split.why:
        return Pick(None, f"No pick within {budget}: {split.why}.")
    if not inside:
        return Pick(None, f"No pick within {budget}: nothing is within ({', '.join(over)} nats){passed}.")
    dec = t.row(KEY.decode_tok_s)
    speed = {i: dec.cells[i].value for i in inside if dec and dec.cells[i].value is not None}
    if not speed:
        return Pick(None, f"No pick within {budget}: decode was not measured for any variant within it{passed}.")
    kld = {i: (measured(doc.variants[i]) or Measured(0.0, None, "")).kld_mean_nats for i in speed}
    order = sorted(speed, key=lambda i: (-(speed[i] or 0.0), kld[i], i))
    best, rest = order[0], order[1:]
    if dec is not None and (alike := noise.ties_of(best, rest, dec.cells)):
        return Pick(None, _tied(t, budget, [best, *alike], dec.cells) + _energy(t, inside) + passed + ".")
    label = t.columns[best].label
    line = f"Pick {label}: fastest decode within {budget}"
    ties = [t.columns[i].label for i in rest if speed[i] == speed[best]]
    slower = [f"{t.columns[i].label} {(1 - (speed[i] or 0) / (speed[best] or 1)) * 100:.0f}% slower" for i in rest
              if speed[i] != speed[best]]  # fmt: skip
    notes = ([f"tie on decode with {', '.join(ties)}: the lower KL wins"] if ties else []) + (
        [f"also within: {', '.join(slower)}"] if slower else []
    )
    if len(inside) == 1 and over:
        notes.append(f"nothing else is within: {', '.join(over)} nats")
    line += f" ({'; '.join(notes)})" if notes else ""
    return Pick(label, line + _energy(t, inside) + passed + ".")


#: What the pick says of variants it cannot tell apart on speed: which is smaller, which uses less energy.
_BETTER = ((KEY.memory_gb, "is smaller", "GB"), (KEY.energy_decode_j_per_token, "uses less energy", "J/token"))


def _tied(t: ComparisonTable, budget: str, cols: list[int], cells: Sequence[Cell]) -> str:
    """'No single pick within KL ≤ 0.05: F16 and Q8_0 decode alike within the run-to-run noise
    (…); Q8_0 is smaller (…) and uses less energy (…); about 9 repeats (…) would likely tell them apart'."""
    labels = [t.columns[i].label for i in cols]
    line = (
        f"No single pick within {budget}: {noise.names(labels)} decode alike within the run-to-run noise "
        f"({noise.values(cols, cells, 'tok/s')}, 95% intervals overlap)"
    )
    better = [
        f"{t.columns[i].label} {what} ({noise.values(cols, row.cells, unit)})"
        for key, what, unit in _BETTER
        if (row := t.row(key)) is not None and (i := noise.least(cols, row.cells)) is not None
    ]
    if better:
        line += f"; {'; '.join(better)}"
    widest = max((noise.separation(cells[cols[0]], cells[i]) for i in cols[1:]), key=lambda s: s.runs or 10**9)
    return f"{line}; {widest.words()}"


def _energy(t: ComparisonTable, inside: list[int]) -> str:
    """'; lowest J/token within the budget: Q4_K_M (1.63 J/token)', the variants it cannot be told
    from ('…: Q4_K_M and Q8_0 alike within the run-to-run noise (…)'), or why there is none: 'n/a,
    no power measured' (no variant has J/token), 'n/a, not measured within the budget'."""
    row = t.row(KEY.energy_decode_j_per_token)
    vals = [(row.cells[i].value, i) for i in inside if row and row.cells[i].value is not None]
    if not row or not vals:
        elsewhere = row is not None and any(c.value is not None for c in row.cells)
        return "; lowest J/token: n/a, " + ("not measured within the budget" if elsewhere else "no power measured")
    value, i = min(vals, key=lambda p: (p[0], p[1]))
    alike = noise.ties_of(i, [j for _, j in sorted(vals) if j != i], row.cells)
    if alike:
        cols = [i, *alike]
        said = noise.names([t.columns[j].label for j in cols])
        widest = max((noise.separation(row.cells[i], row.cells[j]) for j in alike), key=lambda s: s.runs or 10**9)
        return (
            f"; lowest J/token within the budget: none alone, {said} alike within the run-to-run noise "
            f"({noise.values(cols, row.cells, 'J/token')}; {widest.words()})"
        )
    return f"; lowest J/token within the budget: {t.columns[i].label} ({format_value(value)} J/token)"
