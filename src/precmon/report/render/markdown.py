"""The Markdown report: GitHub-flavoured, ready to paste into a forum post or an issue.

Same content as the terminal report (a `sections.Report`): the comparison table (value, ratio to
the baseline, per-run sparkline; the best value in bold), failed variants with their first error,
the roofline note, workload advice, monthly energy and the metric definitions.

Every string from a results file (labels, errors, model, host and GPU names) goes through
`md_text`: pipes, backslashes and backticks are escaped, HTML tags and entities neutralised and
terminal escapes removed, so a label such as `<script>` or `a|b` reads as text.
"""

from __future__ import annotations

from precmon.report.analysis.concurrency import COLUMNS as CONCURRENCY_COLUMNS
from precmon.report.analysis.concurrency import FRONT_NOTE
from precmon.report.analysis.fit import COLUMNS as FIT_COLUMNS
from precmon.report.analysis.fit import FIT_NOTE
from precmon.report.fmt import NOISE_MARK, md_text
from precmon.report.sections import Report
from precmon.report.sparkline import sparkline
from precmon.report.table import WARN_MARK, ComparisonTable

SPARK_WIDTH = 12
_esc = md_text


def markdown_table(table: ComparisonTable, sparklines: bool = True) -> str:
    """The comparison table alone as a GitHub-flavoured Markdown table (also used by compare)."""
    head = ["Metric"]
    for c in table.columns:
        sub = [c.precision or ""] if c.precision else []
        if c.status != "ok":
            sub.append(c.status)
        if c.is_baseline:
            sub.append("baseline")
        head.append(_esc(c.label + (f" ({', '.join(sub)})" if sub else "") + c.mark))
    lines = ["| " + " | ".join(head) + " |", "| --- |" + " ---: |" * len(table.columns)]
    for row in table.rows:
        best = row.best_index() if len(table.columns) > 1 else None
        cells = [_esc(f"{row.label} ({row.unit})")]
        for i, cell in enumerate(row.cells):
            text = f"**{cell.text}**" if i == best else cell.text
            if cell.spread:
                text += f" {cell.spread}"
            if cell.ratio_text:
                text += f" ({cell.ratio_text}{' ' + NOISE_MARK if cell.noise else ''})"
            if sparklines and len(cell.series) > 1:
                text += " " + sparkline(cell.series, SPARK_WIDTH)
            cells.append(_esc(text))
        lines.append("| " + " | ".join(cells) + " |")
    for note in ([legend] if (legend := table.legend()) else []) + table.too_few_notes():
        lines += ["", f"_{_esc(note)}._"]
    return "\n".join(lines) + "\n"


def failures(table: ComparisonTable) -> list[str]:
    return [f"**{_esc(c.label)}** ({_esc(c.status)}): {_esc(c.error or '')}" for c in table.columns if c.error]


def warnings(table: ComparisonTable) -> list[str]:
    """One list item per warning (docs/design.md §4 "Trust"), escaped."""
    return [f"{WARN_MARK} **{_esc(label)}**: {_esc(w)}" for label, w in table.warning_lines()]


def _compare(report: Report) -> str:
    lines = [f"# {_esc(report.title)}", ""] + [f"- {_esc(line)}" for line in report.description] + [""]
    lines.append(markdown_table(report.table))
    if report.fingerprint_diff:
        lines += ["", "## Environment differences", ""]
        lines.append("| key | " + " | ".join(_esc(f) for f in report.fingerprint_files) + " |")
        lines.append("|---" * (len(report.fingerprint_files) + 1) + "|")
        for d in report.fingerprint_diff:
            lines.append(f"| {_esc(d.key)} | " + " | ".join(_esc(v) for v in d.values) + " |")
        lines.append("")
    return "\n".join(lines)


def _concurrency(report: Report) -> list[str]:
    """The "Concurrency" section (report/analysis/concurrency.py): nothing when no level was measured."""
    if not report.concurrency:
        return []
    lines = ["## Concurrency", "", "| " + " | ".join(CONCURRENCY_COLUMNS) + " |"]
    lines.append("| --- | --- |" + " ---: |" * (len(CONCURRENCY_COLUMNS) - 3) + " --- |")
    for row in report.concurrency:
        cells = [_esc(c) for c in row.cells]
        if row.on_front:
            cells[-1] = f"**{cells[-1]}**"
        lines.append("| " + " | ".join(cells) + " |")
    lines += ["", f"_{_esc(FRONT_NOTE)}_", ""]
    return lines


def _fit(report: Report) -> list[str]:
    """The "Memory fit" section (report/analysis/fit.py): nothing when no variant has a fit."""
    if not report.fit:
        return []
    lines = ["## Memory fit", "", "| " + " | ".join(FIT_COLUMNS) + " |"]
    lines.append("| --- |" + " ---: |" * (len(FIT_COLUMNS) - 1))
    lines += ["| " + " | ".join(_esc(c) for c in row.cells) + " |" for row in report.fit]
    lines += [""] + [f"- {_esc(row.line)}" for row in report.fit] + ["", f"_{_esc(FIT_NOTE)}_", ""]
    return lines


def _what_ran(report: Report) -> list[str]:
    """The "What ran" section: each variant's weights (from its GGUF header) and compute path."""
    if not report.ran:
        return []
    lines = [
        "## What ran",
        "",
        "| Variant | Weights (share of bytes) | bpw | Compute path |",
        "| --- | --- | ---: | --- |",
    ]
    for r in report.ran:
        compute = f"{WARN_MARK} {_esc(r.compute)}" if r.fallback else _esc(r.compute)
        lines.append(f"| {_esc(r.label)} | {_esc(r.weights)} | {_esc(r.bits_per_weight)} | {compute} |")
    return lines + [""]


def _answers(report: Report) -> list[str]:
    """The "Answers" section: each variant's answer to the fixed question, where it parts."""
    a = report.answers
    if a is None:
        return []
    lines = [f"## Answers to “{_esc(a.prompt)}”", "", f"_{_esc(a.note)}._", "", "| Variant | Answer |", "| --- | --- |"]
    for r in a.rows:
        where = " (baseline)" if r.is_baseline else (f" _({_esc(r.parts)})_" if r.parts else "")
        lines.append(f"| **{_esc(r.label)}** | {_esc(r.text)}{where} |")
    return lines + [""]


def render_markdown(report: Report) -> str:
    """A `Report` as Markdown (see the module docstring)."""
    if report.kind == "compare":
        return _compare(report)
    table = report.table
    out = [f"# precmon report: {_esc(report.title)}", ""]
    out += [" ".join(_esc(line) for line in report.description), ""]
    out.append(markdown_table(table))
    if report.pick:  # the pick within the quality budget
        out += [f"**{_esc(report.pick)}**", ""]
    base = table.baseline
    if base is not None:
        out.append(
            f"Ratios against **{_esc(base.label)}**: speed rows in × faster (for ms/token and s, "
            "baseline ÷ value), power, energy and memory as the change. Best value in bold; "
            "sparklines show the individual runs."
        )
        out.append("")
    fails = failures(table) + warnings(table)
    if fails:
        out += [f"- {f}" for f in fails] + [""]
    out += _concurrency(report) + _fit(report)
    out += _what_ran(report) + _answers(report)
    roof = report.roofline.lines() if report.roofline else []
    out += ["## Roofline", ""] + [f"- {_esc(line)}" for line in roof] + [""]
    out += ["## Which precision for which workload", ""]
    for adv in report.advice:
        choice = f"**{_esc(adv.choice)}**" if adv.choice else "_not measured_"
        line = f"- **{_esc(adv.title)}** ({_esc(adv.priority)}): {choice}. {_esc(adv.reason)}"
        if adv.caveat:
            line += f" _{_esc(adv.caveat)}_"
        if adv.suggested:
            line += f" (Guide suggests: {_esc(adv.suggested)}.)"
        out.append(line)
    out.append("")
    cols = report.energy_columns
    out += [
        "## Monthly energy at decode load",
        "",
        "| " + " | ".join(_esc(c) for c in cols) + " |",
        "| --- |" + " ---: |" * (len(cols) - 1),
    ]
    out += ["| " + " | ".join(_esc(c) for c in r) + " |" for r in report.energy_rows]
    out += ["", "## Metric definitions", ""]
    out += [f"- **{_esc(name)}**: {_esc(text)}" for name, text in report.definitions]
    source = _esc(report.schema or "a results file")
    out += ["", f"_Generated by precmon {_esc(report.version)} from {source}._", ""]
    return "\n".join(out)
