"""Which measured variant to pick for each workload of the usual precision decision table.

Each workload has the metric that matters for it (chat → decode speed; document
analysis → prefill; coding agent → both; batch → total throughput; laptop → power efficiency;
multi-user → both, with batching; maximum quality → FP16/BF16; DGX Spark → decode + memory fit).
Here the choice is made on *this* results file's numbers, quoting the numbers that decided it,
the usual suggestion for comparison, and the quality caveat of the chosen precision.
Failed variants are never chosen; a workload whose metric was not measured says so.

Where quality was measured (docs/design.md §4 "Quality"), it counts (bands in
analysis/quality_bands.py): while some variant is judged near-lossless or small, the speed
workloads choose only among those and the quality baseline, and say which were left out and why
(a noticeable or large loss, quality that cannot be judged, quality not scored). When none is,
the baseline — judged and usable by definition: it is the reference — is the one whose quality is
known to hold, so the speed workloads choose it and say which variants were passed over, why,
and what the figures alone would have chosen ("Quality aside: …"). Only where the baseline is not
among the usable variants does speed decide alone, and the reason says so. "Maximum quality" is
the fastest near-lossless variant (or the baseline), and the caveat quotes the measured figure
and its verdict first, the document's typical figure after it, labelled as such.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from dataclasses import dataclass

from precmon.core.cells import RowKey, size_order
from precmon.core.metric_keys import KEY
from precmon.core.schema import ResultsDoc, VariantResult
from precmon.report.analysis.quality import quality_caveat, rank
from precmon.report.analysis.quality_bands import NEAR_LOSSLESS, Measured, measured
from precmon.report.fmt import TIMES, format_value, human_tokens
from precmon.report.table import ComparisonTable, build_table

SPARK_MEMORY_GB = 128.0  # DGX Spark unified memory
Decided = tuple[str | None, str]  # (the chosen variant's label or None, the sentence that says why)


@dataclass(frozen=True)
class Advice:
    """The recommendation for one workload.

    Attributes:
        key: "chat", "document", "coding", "batch", "battery", "multi_user", "max_quality", "dgx_spark".
        title: workload name; priority: the metric that matters for it.
        choice: label of the chosen variant, or None when the needed metric was not measured.
        reason: the numbers that decided it (or what is missing); suggested: the source's pick.
        caveat: quality cost of the chosen precision ("" for 16-bit or no choice).
    """

    key: str
    title: str
    priority: str
    choice: str | None
    reason: str
    suggested: str | None
    caveat: str


def _values(t: ComparisonTable, key: RowKey | str, ok: list[int]) -> list[tuple[float, int]]:
    row = t.row(key)
    return [(row.cells[i].value, i) for i in ok if row and row.cells[i].value is not None]  # type: ignore[misc]


def _decide(
    t: ComparisonTable, key: RowKey | str, ok: list[int], what: str, unit: str, better: str, size: str | None = None
) -> Decided:
    """Best of `ok` columns on row `key`, and a sentence "<label> <what> <value> <unit> vs ..."."""
    vals = _values(t, key, ok)
    if not vals:
        row = t.row(key)
        name = f"{row.label} ({row.unit})" if row else (key if isinstance(key, str) else key.stats_key)
        return None, f"{name} was not measured for any usable variant."
    vals.sort(key=lambda p: -p[0] if better == "higher" else p[0])
    (best, bi), rest = vals[0], vals[1:]
    label = t.columns[bi].label
    text = f"{label} {what} {format_value(best)} {unit}"
    if rest:
        text += " vs " + ", ".join(f"{t.columns[i].label} {format_value(v)}" for v, i in rest)
    missing = [t.columns[i].label for i in ok if i not in {j for _, j in vals}]
    if missing:
        text += f" ({', '.join(missing)} not measured{' at ' + size if size else ''})"
    return label, text + "."


def _prefill_key(t: ComparisonTable, ok: list[int]) -> RowKey | None:
    """The largest prompt size measured by the most usable variants (long prompts matter here)."""
    rows = [r for r in t.rows if r.key.metric == KEY.prefill_ms_per_token]
    scored = [(sum(r.cells[i].value is not None for i in ok), size_order(r.key.size), r.key) for r in rows]
    scored = [s for s in scored if s[0] > 0]
    return max(scored, key=lambda s: s[:2])[2] if scored else None


def _levels(t: ComparisonTable, ok: list[int] | None = None) -> list[str]:
    """The concurrency levels of the table's rows (measured by one of `ok` where given), ascending."""
    found = {
        r.key.size
        for r in t.rows
        if r.key.entry.metrics_key == KEY.concurrency and (ok is None or any(r.cells[i].value is not None for i in ok))
    }
    return sorted(found, key=size_order)


def _combined(t: ComparisonTable, ok: list[int], what: str) -> Decided:
    """Geometric mean of decode and prefill speed-ups over a reference: both count equally."""
    pkey = _prefill_key(t, ok)
    dec, pre = t.row(KEY.decode_tok_s), t.row(pkey) if pkey else None
    both = [i for i in ok if dec and pre and dec.cells[i].value and pre.cells[i].value]
    if not both or dec is None or pre is None:
        return None, f"{what} needs both decode and prefill measured."
    ref = t.baseline_index if t.baseline_index in both else both[0]
    d0, p0 = dec.cells[ref].value or 1.0, pre.cells[ref].value or 1.0
    scores = [(math.sqrt((dec.cells[i].value or 0) / d0 * p0 / (pre.cells[i].value or 1)), i) for i in both]
    score, bi = max(scores)
    size = human_tokens(pkey.size) if pkey else ""
    parts = [f"{t.columns[i].label} {s:.2f}{TIMES}" for s, i in sorted(scores, reverse=True)]
    d, p = (dec.cells[bi].value or 0) / d0, p0 / (pre.cells[bi].value or 1)
    return t.columns[bi].label, (
        f"{t.columns[bi].label} decode {d:.2f}{TIMES} and prefill ({size}) {p:.2f}{TIMES} "
        f"{t.columns[ref].label}; combined (geometric mean) {', '.join(parts)}."
    )


def _concurrency(t: ComparisonTable, ok: list[int]) -> Decided | None:
    levels = _levels(t, ok)
    if not levels:
        return None
    lv = levels[-1]
    return _decide(t, RowKey(KEY.concurrency_total_tok_s, lv), ok, f"total at {lv} streams", "tok/s", "higher")


def _per_user(t: ComparisonTable, decided: Decided | None) -> Decided | None:
    """The multi-user choice (most total tok/s at the highest level) with what each of its users
    gets there: per-user decode and the TTFT tail (p99, or p50 in files without it)."""
    if decided is None:
        return None
    choice, reason = decided
    if choice is None:
        return decided
    level = _levels(t)[-1]  # `decided` came from a concurrency row, so there is one
    user = t.value(RowKey(KEY.concurrency_per_user_tok_s, level), choice)
    if user is None:
        return decided
    tails = (("p99", KEY.concurrency_ttft_p99_s), ("p50", KEY.concurrency_ttft_p50_s))
    ttft = [(q, v) for q, k in tails if (v := t.value(RowKey(k, level), choice)) is not None]
    tail = f", TTFT {ttft[0][0]} {format_value(ttft[0][1])} s" if ttft else ""
    return choice, f"{reason} Each of its {level} users decodes {format_value(user)} tok/s{tail}."


def _why_out(q: Measured | None) -> str:
    """'noticeable loss: mean KL …', 'quality cannot be judged: why', 'quality not scored'."""
    if q is None:
        return "quality not scored"
    v = q.verdict()
    return f"{v.word} loss: {q.figures()}" if v.judged else f"quality cannot be judged: {v.why}"


def _grouped(t: ComparisonTable, cols: list[int], quality: dict[int, Measured]) -> str:
    """'Q8_0, Q4_0 (quality cannot be judged: …); Q2_K (large loss: …)': one reason, its variants once."""
    groups: dict[str, list[str]] = {}
    for i in cols:
        groups.setdefault(_why_out(quality.get(i)), []).append(t.columns[i].label)
    return "; ".join(f"{', '.join(labels)} ({why})" for why, labels in groups.items())


def _max_quality(t: ComparisonTable, lossless: list[int], quality: dict[int, Measured]) -> tuple[str, str]:
    """The fastest-decoding near-lossless variant (the least KL where decode was not measured);
    a column without figures of its own here is the baseline (KL 0 by definition)."""
    speed = dict((i, v) for v, i in _values(t, KEY.decode_tok_s, lossless))
    kld = {i: quality[i].kld_mean_nats if i in quality else 0.0 for i in lossless}
    best = max(lossless, key=lambda i: (speed.get(i, -1.0), -kld[i], -i))
    label = t.columns[best].label
    others = [t.columns[i].label for i in lossless if i != best]
    if best not in quality or quality[best].baseline == label:
        text = f"{label} is the quality baseline"
    else:
        text = f"{label} is near-lossless as measured ({quality[best].figures()} vs {quality[best].baseline})"
    if best in speed:
        text += f" and decodes {format_value(speed[best])} tok/s"
    if others:
        text += f", the fastest of the near-lossless {', '.join([label, *others])}"
    return label, text + "."


def _is_spark(doc: ResultsDoc) -> bool:
    names = [(g.name or "").casefold() for g in doc.host.gpus]
    return any("gb10" in n or "dgx spark" in n for n in names)


@dataclass(frozen=True)
class _Pool:
    """The variants the advice may choose from, and the measured quality that decided it.

    Attributes:
        ok: the usable columns a choice may come from; quality: the measured quality by column;
        note: what a speed workload's reason adds about quality ("" where none was scored);
        usable: every column that did not fail; baselines: the labels the scored variants were
        compared with; stands_in: the baseline alone is chosen from, faster variants passed over.
    """

    doc: ResultsDoc
    t: ComparisonTable
    variants: list[VariantResult]
    quality: dict[int, Measured]
    ok: list[int]
    note: str
    usable: list[int] = dataclasses.field(default_factory=list)
    baselines: frozenset[str] = frozenset()
    stands_in: bool = False

    def is_baseline(self, i: int) -> bool:
        """Whether column `i` is the quality baseline itself (KL 0 by definition, scored or not)."""
        return self.t.columns[i].label in self.baselines

    def speed_alone(self) -> _Pool:
        """The same pool with every usable variant in it: what speed alone would choose."""
        return dataclasses.replace(self, ok=self.usable, note="", stands_in=False)


def _pool(doc: ResultsDoc, t: ComparisonTable) -> _Pool:
    """Failed variants are never chosen; where quality was measured, only a judged, usable one is
    (or the baseline) while one exists; else the baseline alone, naming what it passed over;
    speed decides alone only where the baseline is not a usable column, and the note says so."""
    variants = doc.variants
    usable = [i for i, c in enumerate(t.columns) if c.status != "failed"]
    quality = {i: q for i in usable if i < len(variants) and (q := measured(variants[i])) is not None}
    if not quality:
        return _Pool(doc, t, variants, quality, usable, "", usable)
    p = _Pool(doc, t, variants, quality, usable, "", usable, frozenset(q.baseline for q in quality.values()))
    judged_ok = [i for i in usable if i in quality and not p.is_baseline(i) and quality[i].verdict().usable]
    base = [i for i in usable if p.is_baseline(i)]
    why = _grouped(t, [i for i in usable if i not in base and i not in judged_ok], quality)
    if judged_ok:
        ok, note = sorted(base + judged_ok), f"Left out: {why}." if why else ""
    elif base:
        label = t.columns[base[0]].label
        note = f"{label} is the quality baseline, the only variant whose quality is known to hold"
        return dataclasses.replace(p, ok=base, note=note + (f"; passed over: {why}." if why else "."), stands_in=True)
    else:
        ok = usable
        note = (
            f"No variant's quality was judged near-lossless or small ({why}): chosen on speed alone, "
            "so check the quality before you use it."
        )
    return dataclasses.replace(p, ok=ok, note=note)


def _chat(p: _Pool) -> Decided:
    return _decide(p.t, KEY.decode_tok_s, p.ok, "decodes", "tok/s", "higher")


def _document(p: _Pool) -> Decided:
    pkey = _prefill_key(p.t, p.ok)
    if not pkey:
        return None, "Prefill was not measured."
    size = human_tokens(pkey.size)
    return _decide(p.t, pkey, p.ok, f"prefills a {size} prompt at", "ms/token", "lower", size)


def _coding(p: _Pool) -> Decided:
    return _combined(p.t, p.ok, "A coding agent")


def _batch(p: _Pool) -> Decided:
    """The most total tok/s at the highest concurrency, else decode and prefill together."""
    conc = _concurrency(p.t, p.ok)
    batch = conc or _combined(p.t, p.ok, "Batch throughput")
    if conc is None and batch[0] is not None:
        batch = (
            batch[0],
            "No concurrency run, so judged on decode and prefill together (both add to wall time): " + batch[1],
        )
    return batch


def _battery(p: _Pool) -> Decided:
    """The least energy per token, else the least power under decode."""
    energy = _decide(p.t, KEY.energy_decode_j_per_token, p.ok, "uses", "J/token", "lower")
    if energy[0] is None:
        energy = _decide(p.t, KEY.power_decode_w, p.ok, "draws", "W under decode", "lower")
        if energy[0] is not None:
            energy = (energy[0], "energy per token not measured; " + energy[1])
    return energy


def _multi_user(p: _Pool) -> Decided:
    decided = _per_user(p.t, _concurrency(p.t, p.ok))
    return decided or (None, "Concurrency was not measured: run with --concurrency 1,4,16.")


def _highest_precision(p: _Pool) -> Decided:
    """The fastest near-lossless variant where quality was measured, else the highest precision."""
    t = p.t
    lossless = [i for i in p.ok if p.is_baseline(i) or (i in p.quality and p.quality[i].band == NEAR_LOSSLESS)]
    if lossless:
        return _max_quality(t, lossless, p.quality)
    if not p.ok:
        return None, "No variant was measured."
    best = min(p.ok, key=lambda i: (rank(p.variants[i]), i))
    mem = t.value(KEY.memory_gb, t.columns[best].label)
    dec = t.value(KEY.decode_tok_s, t.columns[best].label)
    return (
        t.columns[best].label,
        f"{t.columns[best].label} is the highest precision measured "
        f"(decode {format_value(dec)} tok/s, memory {format_value(mem)} GB); "
        + ("no variant measured near-lossless." if p.quality else "precmon does not measure quality itself."),
    )


def _dgx_spark(p: _Pool) -> Decided:
    """The fastest decoder that fits the Spark's unified memory, on a Spark's results only."""
    if not _is_spark(p.doc):
        return None, "These results are not from a DGX Spark (GB10); measure there to decide."
    t = p.t
    fits = [i for i in p.ok if (t.value(KEY.memory_gb, t.columns[i].label) or 0) <= SPARK_MEMORY_GB]
    spark = _decide(t, KEY.decode_tok_s, fits, "decodes", "tok/s", "higher")
    if spark[0] is not None:
        mem = t.value(KEY.memory_gb, spark[0])
        spark = (spark[0], spark[1][:-1] + f", in {format_value(mem)} GB of the {SPARK_MEMORY_GB:g} GB unified memory.")
    return spark


@dataclass(frozen=True)
class _Workload:
    """One row of the decision table: what it is, the usual suggestion, and the step that decides it."""

    key: str
    title: str
    priority: str
    suggested: str | None
    decide: Callable[[_Pool], Decided]


#: the decision table, in the order `advise` returns it
WORKLOADS: tuple[_Workload, ...] = (
    _Workload("chat", "Interactive chat", "decode speed", "Q4_K_M or FP8", _chat),
    _Workload("document", "Document analysis", "prefill speed on long prompts", "FP16 or FP8", _document),
    _Workload("coding", "Coding agent", "decode and prefill", None, _coding),
    _Workload("batch", "Batch processing", "total throughput", None, _batch),
    _Workload("battery", "Laptop / battery", "power efficiency", "INT4 (Q4_K_M, AWQ)", _battery),
    _Workload(
        "multi_user",
        "Multi-user service",
        "decode and prefill, with batching",
        "FP8 with batching (an FP8 KV cache doubles the concurrency that fits)",
        _multi_user,
    ),
    _Workload("max_quality", "Maximum output quality", "quality only", "FP16 / BF16", _highest_precision),
    _Workload("dgx_spark", "DGX Spark deployment", "decode + memory fit", "NVFP4", _dgx_spark),
)


def _advice(p: _Pool, w: _Workload) -> Advice:
    """The workload's choice with its caveat: the measured quality first, the typical figure after.
    Where the baseline stands in for quality, the reason ends with what the figures alone would choose."""
    choice, reason = w.decide(p)
    t, quality = p.t, p.quality
    idx = next((i for i, c in enumerate(t.columns) if c.label == choice), None)
    cav = quality_caveat(p.variants[idx]) if idx is not None and idx < len(p.variants) else ""
    if idx in quality and quality[idx].baseline != t.columns[idx].label:  # the baseline: 0 by definition
        cav = quality[idx].sentence() + (f" The document's typical figure: {cav}" if cav else "")
    if w.key != "max_quality":
        alone = w.decide(p.speed_alone()) if p.stands_in else (None, "")
        if p.note and (choice is not None or alone[0] is not None):
            reason += " " + p.note
        if alone[0] is not None and alone[0] != choice:
            reason += " Quality aside: " + alone[1]
    return Advice(w.key, w.title, w.priority, choice, reason, w.suggested, cav)


def advise(doc: ResultsDoc, baseline: str | None = None, table: ComparisonTable | None = None) -> list[Advice]:
    """Recommendations for every workload of the decision table, in the order of `WORKLOADS`."""
    t = table if table is not None else build_table(doc, baseline)
    pool = _pool(doc, t)
    return [_advice(pool, w) for w in WORKLOADS]
