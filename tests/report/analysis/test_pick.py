"""The one-line pick (analysis/pick.py): the fastest decoder within mean KL ≤ budget, ties, nothing
within the budget, unjudgeable quality, and the line in every renderer."""

from __future__ import annotations

import pytest

from precmon.core.schema import Quality
from precmon.report.analysis.pick import DEFAULT_MAX_KLD_NATS, pick_line
from precmon.report.export import render
from precmon.report.sections import build_report
from precmon.report.table import build_table, variant_stats

# cpu_doc decodes: F16 402.1, Q8_0 553.4, Q4_K_M 756.2 tok/s; J/token 0.1025, 0.0705, 0.0496


def scored(doc, scores, mass=0.97):
    for v in doc.variants:
        if v.label in scores:
            kld, top1 = scores[v.label]
            v.metrics.update(quality_kld_mean=kld, quality_top1_agree=top1)
            v.quality = Quality(baseline="F16", positions=512, top_k=20, baseline_topk_mass=mass)
    return doc


def pick(doc, max_kld=DEFAULT_MAX_KLD_NATS):
    return pick_line(doc, build_table(doc), max_kld)


def test_the_fastest_within_the_budget_with_the_others_and_the_least_energy(cpu_doc):
    p = pick(scored(cpu_doc, {"F16": (0.0, 1.0), "Q8_0": (0.002, 0.98), "Q4_K_M": (0.03, 0.92)}))
    assert p.choice == "Q4_K_M"
    assert p.line == (
        "Pick Q4_K_M: fastest decode within KL ≤ 0.05 (also within: Q8_0 27% slower, F16 47% slower); "
        "lowest J/token within the budget: Q4_K_M (0.0496 J/token)."
    )


def test_a_variant_over_the_budget_is_not_picked_and_the_budget_is_the_users(cpu_doc):
    doc = scored(cpu_doc, {"F16": (0.0, 1.0), "Q8_0": (0.002, 0.98), "Q4_K_M": (0.08, 0.85)})
    assert pick(doc).choice == "Q8_0"
    assert pick(doc, 0.1).choice == "Q4_K_M"  # --max-kld 0.1
    assert pick(doc, 0.08).choice == "Q4_K_M"  # the edge is within


def test_nothing_but_the_baseline_within_the_budget(cpu_doc):
    p = pick(scored(cpu_doc, {"F16": (0.0, 1.0), "Q8_0": (0.06, 0.9), "Q4_K_M": (0.3, 0.7)}))
    assert p.choice == "F16"
    assert p.line.startswith("Pick F16: fastest decode within KL ≤ 0.05 (nothing else is within: Q8_0 0.0600, ")
    assert "Q4_K_M 0.300 nats)" in p.line


def test_nothing_within_when_the_baseline_is_not_a_column(cpu_doc):
    doc = scored(cpu_doc, {"Q8_0": (0.06, 0.9), "Q4_K_M": (0.3, 0.7)})
    doc.variants = [v for v in doc.variants if v.label != "F16"]
    p = pick(doc)
    assert p.choice is None
    assert p.line == "No pick within KL ≤ 0.05: nothing is within (Q8_0 0.0600, Q4_K_M 0.300 nats)."


def test_a_tie_on_decode_goes_to_the_lower_kl_and_is_named(cpu_doc):
    doc = scored(cpu_doc, {"F16": (0.0, 1.0), "Q8_0": (0.01, 0.97), "Q4_K_M": (0.02, 0.95)})
    for v in doc.variants:
        if v.label in ("Q8_0", "Q4_K_M"):
            v.metrics["decode_tok_s"] = 600.0
    p = pick(doc)
    assert p.choice == "Q8_0"
    assert "(tie on decode with Q4_K_M: the lower KL wins; also within: F16 33% slower)" in p.line


@pytest.mark.parametrize("mass", [0.026, 0.4999])
def test_nothing_is_picked_on_unjudgeable_quality(cpu_doc, mass):
    p = pick(scored(cpu_doc, {"F16": (0.0, 1.0), "Q8_0": (0.0004, 0.7), "Q4_K_M": (0.004, 0.01)}, mass))
    assert p.choice is None
    assert p.line.startswith("No pick within KL ≤ 0.05: quality cannot be judged (the baseline's top-20 held")


def test_unjudgeable_variants_are_left_out_while_another_is_judged_and_the_line_says_so(cpu_doc):
    doc = scored(cpu_doc, {"F16": (0.0, 1.0), "Q8_0": (0.002, 0.98), "Q4_K_M": (0.001, 0.99)})
    next(v for v in doc.variants if v.label == "Q4_K_M").quality.positions = 10
    p = pick(doc)
    assert p.choice == "Q8_0"
    assert p.line.endswith(
        "lowest J/token within the budget: Q8_0 (0.0705 J/token); not considered: Q4_K_M (quality cannot be judged)."
    )
    assert p.short == "Pick Q8_0: fastest decode within KL ≤ 0.05"  # the TUI border keeps its few words


def test_a_variant_whose_quality_was_not_scored_is_named(cpu_doc):
    p = pick(scored(cpu_doc, {"F16": (0.0, 1.0), "Q8_0": (0.002, 0.98)}))
    assert p.choice == "Q8_0" and p.line.endswith("; not considered: Q4_K_M (quality not scored).")
    doc = scored(cpu_doc, {"F16": (0.0, 1.0), "Q8_0": (0.3, 0.7)})
    assert pick(doc).line == (
        "Pick F16: fastest decode within KL ≤ 0.05 (nothing else is within: Q8_0 0.300 nats); lowest J/token "
        "within the budget: F16 (0.102 J/token); not considered: Q4_K_M (quality not scored)."
    )


def test_without_power_the_line_says_so_instead_of_dropping_the_clause(cpu_doc):
    import copy

    fresh = copy.deepcopy(cpu_doc)
    doc = scored(cpu_doc, {"F16": (0.0, 1.0), "Q8_0": (0.002, 0.98), "Q4_K_M": (0.03, 0.92)})
    for v in doc.variants:
        v.metrics["energy_decode_j_per_token"] = None
    assert pick(doc).line == (
        "Pick Q4_K_M: fastest decode within KL ≤ 0.05 (also within: Q8_0 27% slower, F16 47% slower); "
        "lowest J/token: n/a, no power measured."
    )
    doc = scored(fresh, {"F16": (0.0, 1.0), "Q8_0": (0.3, 0.7), "Q4_K_M": (0.3, 0.7)})
    for v in doc.variants:
        if v.label == "F16":
            v.metrics["energy_decode_j_per_token"] = None
    assert pick(doc).line.endswith("; lowest J/token: n/a, not measured within the budget.")


def test_the_baseline_counts_as_within_when_only_the_others_carry_figures(cpu_doc):
    """The baseline is the reference the others name: KL 0 by definition, scored itself or not."""
    p = pick(scored(cpu_doc, {"Q8_0": (0.06, 0.9), "Q4_K_M": (0.3, 0.7)}))
    assert p.choice == "F16" and "not considered" not in p.line


def test_no_quality_no_line(cpu_doc):
    assert pick(cpu_doc).line == "" and build_report(cpu_doc).pick == ""


def test_the_line_in_the_terminal_markdown_and_html(cpu_doc):
    from rich.console import Console

    from precmon.report.render.terminal import render_terminal

    doc = scored(cpu_doc, {"F16": (0.0, 1.0), "Q8_0": (0.002, 0.98), "Q4_K_M": (0.03, 0.92)})
    assert "**Pick Q4_K_M: fastest decode within KL ≤ 0.05" in render(doc, "md")
    assert '<p id="pick"><b>Pick Q4_K_M: fastest decode within KL ≤ 0.05' in render(doc, "html")
    assert "Pick Q8_0: fastest decode within KL ≤ 0.01" in render(doc, "md", max_kld=0.01)
    console = Console(width=400, record=True, color_system=None)
    console.print(render_terminal(build_report(doc)))
    assert "Pick Q4_K_M: fastest decode within KL ≤ 0.05" in console.export_text()


def test_the_html_pareto_view_draws_the_frontier_and_greys_the_unjudgeable(cpu_doc):
    import copy

    from precmon.report.render.html.pareto import frontier

    plain = copy.deepcopy(cpu_doc)
    doc = scored(cpu_doc, {"F16": (0.0, 1.0), "Q8_0": (0.002, 0.98), "Q4_K_M": (0.03, 0.92)})
    html = render(doc, "html")
    assert 'id="pareto"' in html and "Quality loss vs decode tok/s" in html and "Quality loss vs J/token" in html
    pts = [("F16", 0.0, 400.0, True), ("Q8_0", 0.01, 300.0, True), ("Q4", 0.03, 700.0, True), ("X", 0.0, 900.0, False)]
    assert [p[0] for p in frontier(pts, higher=True)] == ["F16", "Q4"]  # Q8_0: F16 beats it on both
    assert "Pareto" not in render(plain, "html")  # no quality: no view
    doc = scored(plain, {"F16": (0.0, 1.0), "Q8_0": (0.002, 0.98), "Q4_K_M": (0.03, 0.92)}, mass=0.02)
    assert "(cannot be judged)" in render(doc, "html")


def noisy(doc, metric, intervals):
    """Widen the runs' 95% intervals of `metric` to {label: (low, high)}."""
    for v in doc.variants:
        if v.label in intervals:
            stats = variant_stats(v)  # worked out from the runs where the file has none
            v.metrics_stats = stats | {metric: dict(stats[metric], ci95=list(intervals[v.label]))}
    return doc


SCORES = {"F16": (0.0, 1.0), "Q8_0": (0.002, 0.98), "Q4_K_M": (0.03, 0.92)}


def test_a_tie_inside_the_noise_is_never_a_pick_and_says_what_would_separate_it(cpu_doc):
    # Q4_K_M 756.2 [600, 900] overlaps Q8_0 553.4 [500, 610]; F16 402.1 [396, 408] is apart from both
    doc = noisy(scored(cpu_doc, SCORES), "decode_tok_s", {"Q4_K_M": (600.0, 900.0), "Q8_0": (500.0, 610.0)})
    p = pick(doc)
    assert p.choice is None and "Pick" not in p.line
    assert p.line.startswith(
        "No single pick within KL ≤ 0.05: Q4_K_M and Q8_0 decode alike within the run-to-run noise "
        "(756.2 vs 553.4 tok/s, 95% intervals overlap); Q4_K_M is smaller (0.0800 vs 0.140 GB); "
        "Q4_K_M uses less energy (0.0496 vs 0.0705 J/token); about 4 repeats (--target-ci 15.4 --max-repeats 4) "
        "would likely tell them apart; lowest J/token within the budget: Q4_K_M (0.0496 J/token)."
    )
    assert p.short == "No single pick within KL ≤ 0.05: Q4_K_M and Q8_0 decode alike within the run-to-run noise"


def test_intervals_apart_still_pick_and_a_wide_loser_does_not_tie(cpu_doc):
    # Q8_0's interval is wide but ends below Q4_K_M's: the pick stands
    doc = noisy(scored(cpu_doc, SCORES), "decode_tok_s", {"Q8_0": (300.0, 740.0)})
    assert pick(doc).choice == "Q4_K_M" and pick(doc).line.startswith("Pick Q4_K_M: fastest decode")


def test_the_lowest_energy_inside_the_noise_is_named_as_a_tie(cpu_doc):
    doc = noisy(scored(cpu_doc, SCORES), "energy_decode_j_per_token", {"Q4_K_M": (0.03, 0.08), "Q8_0": (0.06, 0.08)})
    line = pick(doc).line
    assert line.startswith("Pick Q4_K_M: fastest decode")  # decode stays apart
    assert line.endswith(
        "lowest J/token within the budget: none alone, Q4_K_M and Q8_0 alike within the run-to-run noise "
        "(0.0496 vs 0.0705 J/token; about 9 repeats (--target-ci 17.4 --max-repeats 9) would likely tell them apart)."
    )


def test_a_tie_reads_the_same_in_every_report_format_and_the_tui_footer(cpu_doc):
    from rich.console import Console

    from precmon.report.render.terminal import render_terminal
    from precmon.tui.widgets.sweep_table import pick_short

    doc = noisy(scored(cpu_doc, SCORES), "decode_tok_s", {"Q4_K_M": (600.0, 900.0), "Q8_0": (500.0, 610.0)})
    said = "No single pick within KL ≤ 0.05: Q4_K_M and Q8_0 decode alike within the run-to-run noise"
    assert f"**{said}" in render(doc, "md") and f'<p id="pick"><b>{said}' in render(doc, "html")
    console = Console(width=600, record=True, color_system=None)
    console.print(render_terminal(build_report(doc)))
    assert said in console.export_text()
    assert pick_short(doc, build_table(doc)) == said  # the TUI sweep table's bottom border
