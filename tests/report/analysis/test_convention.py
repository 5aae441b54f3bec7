"""Reports name the positions the KL figures were scored on (report/analysis/convention.py), and a
results file written before `quality.convention` existed loads and says it scored from the start."""

from __future__ import annotations

from precmon.core.schema import Quality, variant_from_json
from precmon.report.analysis.convention import convention_line
from precmon.report.export import render

NEW = Quality(baseline="F16", positions=765, top_k=1000, text="built-in", convention="llama-perplexity", windows=3,
              window_tokens=512)  # fmt: skip


def scored(doc, quality):
    for v in doc.variants:
        v.metrics.update(quality_kld_mean=0.01, quality_top1_agree=0.97)
        v.quality = quality(v.label) if callable(quality) else quality
    return doc


def test_an_old_file_loads_and_says_it_scored_from_the_start():
    v = variant_from_json({"label": "Q4", "quality": {"baseline": "F16", "positions": 512, "top_k": 20}})
    assert v.quality is not None and v.quality.convention is None and v.quality.scored_as == "from-start"


def test_every_report_names_the_convention_next_to_the_kl_rows(cpu_doc):
    doc = scored(cpu_doc, NEW)
    line = (
        "Quality: KL scored as `llama-perplexity --kl-divergence -c 512` does (3 windows of 512 tokens, 765 "
        "positions of the built-in text, each with half a window of context or more)."
    )
    assert convention_line(doc) == line
    for fmt in ("md", "html"):
        assert "llama-perplexity --kl-divergence -c 512" in render(doc, fmt)


def test_an_old_file_and_mixed_conventions_are_said():
    from precmon.core.schema import ResultsDoc, VariantResult

    old = VariantResult(label="Q4", metrics={"quality_kld_mean": 0.1}, quality=Quality(baseline="F16", positions=512))
    new = VariantResult(label="Q8", metrics={"quality_kld_mean": 0.01}, quality=NEW)
    assert convention_line(ResultsDoc(variants=[old])) == (
        "Quality: KL scored from the text's start (512 positions of the built-in text; written before precmon "
        "named its convention; reads higher than llama-perplexity's windows)."
    )
    mixed = convention_line(ResultsDoc(variants=[new, old]))
    assert mixed is not None and mixed.startswith(
        "Quality: KL scored differently, so the figures do not compare: Q8 as"
    )
    assert "; Q4 from the text's start" in mixed
    assert convention_line(ResultsDoc(variants=[VariantResult(label="x")])) is None  # no quality: no line
