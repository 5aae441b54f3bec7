"""The HTML report's "What ran" and "Answers" sections (report/analysis/answers.py): the
weights and compute path of each variant, and the answers side by side, every string escaped."""

from __future__ import annotations

from collections.abc import Callable

from precmon.report.sections import Report
from precmon.report.table import WARN_MARK


def what_ran_html(report: Report, escape: Callable[[object], str]) -> str:
    if not report.ran:
        return ""
    rows = []
    for r in report.ran:
        compute = f'<span class="warning">{WARN_MARK} {escape(r.compute)}</span>' if r.fallback else escape(r.compute)
        rows.append(
            f"<tr><td>{escape(r.label)}</td><td>{escape(r.weights)}</td>"
            f'<td class="num">{escape(r.bits_per_weight)}</td><td>{compute}</td></tr>'
        )
    head = "<th>Variant</th><th>Weights (share of bytes)</th><th>bpw</th><th>Compute path</th>"
    return f'<h2>What ran</h2><table id="what-ran"><thead><tr>{head}</tr></thead><tbody>{"".join(rows)}</tbody></table>'


def answers_html(report: Report, escape: Callable[[object], str]) -> str:
    a = report.answers
    if a is None:
        return ""
    rows = []
    for r in a.rows:
        where = (
            ' <i class="muted">(baseline)</i>'
            if r.is_baseline
            else (f' <i class="muted">({escape(r.parts)})</i>' if r.parts else "")
        )
        rows.append(f"<tr><td><b>{escape(r.label)}</b></td><td>{escape(r.text)}{where}</td></tr>")
    return (
        f'<h2>Answers to “{escape(a.prompt)}”</h2><p class="muted">{escape(a.note)}.</p>'
        f'<table id="answers"><thead><tr><th>Variant</th><th>Answer</th></tr></thead>'
        f"<tbody>{''.join(rows)}</tbody></table>"
    )
