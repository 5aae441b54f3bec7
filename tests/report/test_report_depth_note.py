"""The HTML report says why there is no decode-vs-depth line (issue 30): a variant with decode at
one depth only (a sweep of `--depth 4096`, or d0 kept where d4096 failed) drew no chart and no
word, so a reader looked for a chart that could never be drawn."""

from __future__ import annotations

import pytest
from report_helpers import load_doc

from precmon.core.schema import ResultsDoc
from precmon.report.export import render


@pytest.fixture
def depth_doc() -> ResultsDoc:
    return load_doc("depth_tiny.json")


def _only(doc: ResultsDoc, depth: str, labels: tuple[str, ...] = ("F16", "Q4_K_M")) -> ResultsDoc:
    """`labels`' decode kept at `depth` alone (the others read as not measured)."""
    for v in doc.variants:
        if v.label in labels:
            at = v.metrics["decode_tok_s_at_depth"]
            v.metrics["decode_tok_s_at_depth"] = {d: (x if d == depth else None) for d, x in at.items()}
    return doc


def test_a_single_depth_sweep_says_why_there_is_no_chart(depth_doc):
    page = render(_only(depth_doc, "4096"), "html")
    assert "<polyline" not in page
    assert 'id="depth-note">depth chart: needs &gt;= 2 depths; this sweep measured only d4096</p>' in page


def test_variants_of_different_single_depths_are_named(depth_doc):
    doc = _only(_only(depth_doc, "0", ("F16",)), "4096", ("Q4_K_M",))
    page = render(doc, "html")
    assert "<polyline" not in page
    assert "depth chart: needs &gt;= 2 depths of one variant; measured F16 only d0, Q4_K_M only d4096" in page


def test_a_variant_left_out_of_the_chart_is_named(depth_doc):
    page = render(_only(depth_doc, "0", ("Q4_K_M",)), "html")
    assert page.count("<polyline") == 1  # F16's line is drawn
    assert "depth chart: a line needs &gt;= 2 depths; left out: Q4_K_M only d0" in page


def test_the_label_in_the_note_is_escaped(depth_doc):
    depth_doc.variants[1].label = "<b>Q4</b>"
    page = render(_only(depth_doc, "0", ("<b>Q4</b>",)), "html")
    assert "left out: &lt;b&gt;Q4&lt;/b&gt; only d0" in page


def test_no_note_with_a_whole_chart_or_without_depth(depth_doc, cpu_doc):
    assert "depth-note" not in render(depth_doc, "html")
    assert "depth-note" not in render(cpu_doc, "html")
