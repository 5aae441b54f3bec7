"""The report, built once: every section as data, for the renderers to lay out.

`precmon report` used to assemble its content three times (terminal, Markdown, HTML), each
calling the table, roofline and advice builders itself. `build_report` does it once; the
renderers under `render/` (`terminal.render_terminal`, `markdown.render_markdown`,
`html.page.render_html`, `csv.report_csv`, `llamabench.render_llama_bench`; JSON in `export`)
only format a `Report`. `build_compare` makes the same model for
`precmon compare` (several files side by side: sources instead of a run description, no roofline,
advice or energy sections).

Strings here are as the file has them; each renderer escapes them for its own medium.
"""

from __future__ import annotations

from dataclasses import dataclass

from precmon.core.schema import ResultsDoc
from precmon.report.analysis.advice import Advice, advise
from precmon.report.analysis.answers import Answers, RanRow, answers, what_ran
from precmon.report.analysis.compare import merge_documents
from precmon.report.analysis.concurrency import ConcurrencyRow, concurrency_rows
from precmon.report.analysis.convention import convention_line
from precmon.report.analysis.energy import energy_columns, energy_rows, monthly_energy, monthly_energy_lines
from precmon.report.analysis.fingerprint_diff import FingerprintDiff, fingerprint_diff
from precmon.report.analysis.fit import FitRow, fit_rows
from precmon.report.analysis.kv import kv_lines
from precmon.report.analysis.nodes import node_lines, scope_line
from precmon.report.analysis.pick import budget, pick_line
from precmon.report.analysis.quality import QUALITY_DEFINITION, QUALITY_TERM
from precmon.report.analysis.roofline import Roofline, roofline
from precmon.report.fmt import is_number, metric_definitions
from precmon.report.model import CompareDoc
from precmon.report.table import Column, ComparisonTable, build_table

REPORT, COMPARE = "report", "compare"


@dataclass(frozen=True)
class Report:
    """Everything a rendered report shows.

    Attributes:
        kind: "report" (one results file) or "compare" (several).
        doc: the document rendered (for compare: the merged one), for the JSON and CSV exports.
        title: e.g. "spark · NVIDIA GB10 · 2025-10-20" (report) or "precmon comparison".
        description: what was measured and how (report), or one line per source file (compare).
        table: the comparison table.
        failed: the columns that have an error to show, in column order.
        roofline / advice / energy_* / concurrency: the report's further sections (empty for
            compare); `concurrency` is one row per variant and level (report/analysis/concurrency.py),
            `fit` one per variant with a memory fit (report/analysis/fit.py).
        answers / ran: each variant's answer to the fixed question, and what its weights and
            kernels were (report/analysis/answers.py; None / () when the file has none).
        fingerprint_files / fingerprint_diff (compare): one name per file, and the environment
            keys whose values differ between the files (report/analysis/fingerprint_diff.py).
        definitions: the glossary (term, definition) printed at the end.
        version, schema: the generator and schema named in the footer.
    """

    kind: str
    doc: ResultsDoc
    title: str
    description: tuple[str, ...]
    table: ComparisonTable
    failed: tuple[Column, ...]
    roofline: Roofline | None = None
    advice: tuple[Advice, ...] = ()
    energy_columns: tuple[str, ...] = ()
    energy_rows: tuple[tuple[str, ...], ...] = ()
    energy_lines: tuple[str, ...] = ()
    concurrency: tuple[ConcurrencyRow, ...] = ()
    fit: tuple[FitRow, ...] = ()
    definitions: tuple[tuple[str, str], ...] = ()
    version: str = ""
    schema: str = ""
    fingerprint_files: tuple[str, ...] = ()
    fingerprint_diff: tuple[FingerprintDiff, ...] = ()
    answers: Answers | None = None
    ran: tuple[RanRow, ...] = ()
    # the one-line pick within a quality budget (analysis/pick.py; "" without quality)
    pick: str = ""


def title_of(doc: ResultsDoc) -> str:
    """ "host · GPUs · date" of a results document."""
    gpus = ", ".join(g.name or "" for g in doc.host.gpus)
    parts = [doc.host.hostname or "unknown host", gpus or "CPU", (doc.created or "")[:10]]
    return " · ".join(p for p in parts if p)


def _chat_bit(doc: ResultsDoc) -> str | None:
    """Which variants ran on the chat endpoint (completions, the default, goes unsaid)."""
    variants = doc.variants
    chat = [v.label for v in variants if v.server.endpoint == "chat"]
    if not chat and doc.settings.get("endpoint") != "chat":
        return None
    scope = "" if len(chat) in (0, len(variants)) else " for " + ", ".join(chat)
    return f"chat endpoint{scope} (prompt sizes include the chat template)"


def describe_run(doc: ResultsDoc) -> list[str]:
    """Short lines on what was measured and how (settings, servers, power sources)."""
    s = doc.settings
    lines = []
    bits = []
    if s.get("output_tokens"):
        bits.append(f"{s['output_tokens']} output tokens")
    if s.get("decode_prompt_tokens"):
        bits.append(f"{s['decode_prompt_tokens']}-token decode prompt")
    if s.get("repeats") and s.get("target_ci_pct"):
        top = max(s["repeats"], s.get("max_repeats") or s["repeats"])
        until = f"until the 95% CI is within {s['target_ci_pct']:g}% of the median"
        bits.append(f"median of {s['repeats']} to {top} repeats ({until})")
    elif s.get("repeats"):
        bits.append(f"median of {s['repeats']} repeats")
    if s.get("warmup") is not None:
        bits.append(f"{s['warmup']} warm-up")
    if chat := _chat_bit(doc):
        bits.append(chat)
    depths = s.get("depth")
    if isinstance(depths, list) and depths and all(is_number(d) for d in depths):
        shown = ", ".join(f"d{int(d)}" for d in depths)
        bits.append(f"context depths {shown} (the prefix served from the prompt cache)")
    if bits:
        lines.append("Settings: " + ", ".join(bits) + ".")
    servers: list[str] = []
    for v in doc.variants:
        name = " ".join(x for x in (v.server.kind, v.server.version) if x)
        if name and name not in servers:
            servers.append(name)
    if servers:
        lines.append("Server: " + ", ".join(servers) + ".")
    lines.append(scope_line(doc))  # over several machines: every node's, unmeasured ones named
    scored_as = convention_line(doc)  # which positions the KL rows are of (analysis/convention.py)
    return lines + node_lines(doc) + kv_lines(doc) + ([scored_as] if scored_as else [])


def _failed(table: ComparisonTable) -> tuple[Column, ...]:
    return tuple(c for c in table.columns if c.error)


def build_report(
    doc: ResultsDoc,
    baseline: str | None = None,
    hours_per_day: float | None = None,
    price_per_kwh: float | None = None,
    bandwidth_gbs: float | None = None,
    max_kld: float | None = None,
) -> Report:
    """The report of one results document (docs/design.md §5).

    Raises:
        BaselineError: `baseline` is not one of the variants' labels.
    """
    table = build_table(doc, baseline)
    entries = monthly_energy(doc, hours_per_day, price_per_kwh)
    return Report(
        kind=REPORT,
        doc=doc,
        title=title_of(doc),
        description=tuple(describe_run(doc)),
        table=table,
        failed=_failed(table),
        roofline=roofline(doc, bandwidth_gbs, baseline),
        advice=tuple(advise(doc, baseline, table=table)),
        energy_columns=tuple(energy_columns(hours_per_day, price_per_kwh)),
        energy_rows=tuple(tuple(r) for r in energy_rows(entries)),
        energy_lines=tuple(monthly_energy_lines(doc, hours_per_day, price_per_kwh)),
        concurrency=concurrency_rows(doc),
        fit=fit_rows(doc),
        definitions=_definitions({r.key.metric for r in table.rows if not (r.key.size or r.key.sub)}),  # scalar rows
        version=doc.precmon_version or "",
        schema=doc.schema or "",
        answers=answers(doc, table.baseline.label if table.baseline is not None else None),
        ran=what_ran(doc),
        pick=pick_line(doc, table, budget(doc, max_kld)).line,  # --max-kld, else the file's max_kld
    )


def _definitions(present: set[str]) -> tuple[tuple[str, str], ...]:
    """The metric definitions of the rows shown; quality's (where its rows are) whole, with the bands."""
    return tuple((n, QUALITY_DEFINITION if n == QUALITY_TERM else d) for n, d in metric_definitions(present))


def source_lines(merged: CompareDoc) -> list[str]:
    """One line per file of a merged comparison: "file: host (GPUs), date"."""
    out = []
    for s in merged.sources:
        gpus = ", ".join(str(g) for g in s.gpus if g) or "CPU"
        out.append(f"{s.file or '?'}: {s.host_label} ({gpus}), {s.created or 'undated'}")
    return out + node_lines(merged)  # variants measured over several machines: who drew what


def build_compare(docs: list[ResultsDoc], names: list[str] | None = None, group: str = "file") -> Report:
    """The comparison of several results documents; ratios against the first column; `group`:
    columns in file order ("file") or precision-major ("precision", report/analysis/fleet.py)."""
    merged = merge_documents(docs, names, group)
    table = build_table(merged)
    diff = tuple(fingerprint_diff(docs))
    if diff:
        merged.fingerprint_diff = [{"key": d.key, "values": list(d.values)} for d in diff]
    return Report(
        kind=COMPARE,
        doc=merged,
        title="precmon comparison",
        description=tuple(source_lines(merged)),
        table=table,
        failed=_failed(table),
        schema=merged.schema,
        fingerprint_files=tuple(s.file or s.host or f"file {i + 1}" for i, s in enumerate(merged.sources)),
        fingerprint_diff=diff,
    )
