"""Context depth's rules (measure/depth/steps.py): the cached-count check, the tolerance per server,
clipping to the context, prompts of exact size after a prefix, and the summary's warnings."""

from __future__ import annotations

from precmon.core.schema import Run, VariantResult
from precmon.measure.depth.run import missing, summarize
from precmon.measure.depth.steps import (
    BEYOND,
    NOT_CACHED,
    SLACK_TOKENS,
    DepthPlan,
    cache_problem,
    checker,
    fill_checker,
    joined,
    plan_depths,
    tolerance,
)
from precmon.measure.prompts import PromptBuilder


def test_cached_exactly_the_prefix_is_valid():
    assert cache_problem(2048, 2048, *tolerance("llamacpp", {})) is None


def test_llamacpp_may_match_a_few_tokens_of_the_next_nonce():
    below, above = tolerance("llamacpp", {})
    assert (below, above) == (SLACK_TOKENS, SLACK_TOKENS)
    assert cache_problem(2050, 2048, below, above) is None  # measured: cache_n = D + 1 or D + 2
    assert cache_problem(2048 + above + 1, 2048, below, above).startswith(BEYOND)


def test_within_vllms_block_is_valid_below_it_is_not():
    below, above = tolerance("vllm", {})  # no block_size reported: 128
    assert below == 127 + SLACK_TOKENS
    assert cache_problem(2048 - 100, 2048, below, above) is None  # whole blocks only
    assert cache_problem(1920, 2048, below, above) is None  # 15 blocks of 128 of a 2048 prefix + new
    assert cache_problem(2048 - 128 - SLACK_TOKENS, 2048, below, above).startswith(NOT_CACHED)
    assert tolerance("vllm", {"block_size": 16})[0] == 15 + SLACK_TOKENS
    assert tolerance("vllm", {"block_size": True})[0] == 127 + SLACK_TOKENS  # not a number


def test_not_cached_is_flagged():
    problem = cache_problem(3, 2048, *tolerance("llamacpp", {}))
    assert problem is not None and problem.startswith(NOT_CACHED)
    assert "3 cached prompt tokens, expected 2048 (-4/+4)" in problem


def test_a_chat_template_widens_the_lower_bound():
    assert tolerance("llamacpp", {}, template_tokens=27) == (27 + SLACK_TOKENS, SLACK_TOKENS)


def test_depths_beyond_the_context_are_clipped_with_one_line():
    plan, notes = plan_depths([0, 2048, 4096, 8192], [64, 3000], 4096, 32)
    assert plan.depths == [0, 2048]  # 4096 + 16 + 32 > 4096
    assert plan.prefill_sizes == {0: [64, 3000], 2048: [64]}
    assert notes == [
        "depth 4096, 8192 skipped: beyond the server's context (4096 tokens)",
        "prefill 3000 @ d2048 skipped: beyond the server's context (4096 tokens)",
    ]
    assert plan.requests(repeats=2) == (2 * 3) + (1 + 2 * 2)


def test_no_context_known_keeps_every_depth():
    plan, notes = plan_depths([4096, 0, 4096], [512], None, 128)
    assert plan.depths == [0, 4096] and notes == []


def words_tokenizer(text: str) -> int:
    """One token per word plus a BOS: a tokenizer whose counts the test can reason about."""
    return len(text.split()) + 1


def test_joined_prompt_is_prefix_plus_exactly_n_new_tokens():
    builder = PromptBuilder(words_tokenizer)
    prefix = builder.build(100)
    p = joined(builder, prefix, 40)
    assert p.text.startswith(prefix.text + " ")
    assert words_tokenizer(p.text) == 140 and p.expected_tokens == 140
    assert p.target_tokens == 40 and p.nonce == prefix.nonce  # the prefix's nonce: the cache salt
    q = joined(builder, prefix, 40)
    assert q.text != p.text  # every new part has its own nonce


def run(phase: str, prompt: int, cached: int | None, ttft_s: float = 0.5) -> Run:
    return Run(phase=phase, prompt_tokens=prompt, output_tokens=1, ttft_s=ttft_s, cached_tokens=cached)


def test_checker_judges_the_cached_count_and_counts_prefill_over_new_tokens():
    check = checker(2048, 2048, 4, 4)
    good = run("depth_prefill", 2048 + 512, 2049)
    check(good)
    assert good.ok and good.depth_tokens == 2048 and good.extra.new_tokens == 511
    assert good.prefill_ms_per_token == 500.0 / 511
    bad = run("depth_prefill", 2048 + 512, 3)
    check(bad)
    assert not bad.ok and bad.reason.startswith(NOT_CACHED)
    assert bad.prefill_ms_per_token == 500.0 / (2560 - 3)  # the tokens it did process
    blind = run("depth_decode", 2064, None)
    check(blind)
    assert blind.ok and blind.extra.depth_cache.startswith("unchecked")


def test_depth_zero_is_left_to_the_ordinary_no_cache_check():
    r = run("depth_decode", 16, 0)
    checker(0, 0, 4, 4)(r)
    assert r.ok and r.depth_tokens == 0 and r.extra.expected_cached is None


def test_a_fill_served_from_the_cache_is_not_a_cold_prefill():
    r = run("depth_fill", 2048, 2000)
    fill_checker(2048)(r)
    assert not r.ok and "cache fill" in r.reason
    cold = run("depth_fill", 2048, 2)
    fill_checker(2048)(cold)
    assert cold.ok


def test_summary_warns_once_per_depth_and_fills_planned_nulls():
    res = VariantResult(label="x", precision=None, model=None)
    check = checker(2048, 2048, 4, 4)
    fill = run("depth_fill", 2048, 2, ttft_s=1.25)
    fill_checker(2048)(fill)
    runs = [fill] + [run("depth_decode", 2064, c) for c in (2048, 2049, 3)]
    for r in runs[1:]:
        check(r)
    res.runs = runs
    plan = DepthPlan([0, 2048], {0: [512], 2048: [512]})
    res.warnings = ["depth-not-cached: an old line", "noisy: kept"]
    notes = summarize(res, plan)
    assert notes == []
    assert res.metrics["depth_fill_ms"] == {"2048": 1250.0}
    assert res.metrics["decode_tok_s_at_depth"] == {"0": None, "2048": None}  # no medians made here
    assert res.metrics["prefill_ms_per_token_at_depth"] == {"0": {"512": None}, "2048": {"512": None}}
    assert missing(res.metrics, plan)
    fig = res.validity["depth_cache"]["2048"]
    assert fig["cached_tokens"] == [2048, 2049, 3] and fig["not_cached"] == 1 and fig["expected_cached"] == 2048
    assert res.warnings == [
        "noisy: kept",
        "depth-not-cached: 1 of 3 runs at d2048 had 3 cached prompt tokens, expected 2048 (-4/+4): "
        "the prefix was not reused; those runs are excluded",
    ]
    summarize(res, plan)
    assert len([w for w in res.warnings if w.startswith(NOT_CACHED)]) == 1  # replaced, not added


def test_summary_notes_a_blind_check():
    res = VariantResult(label="x", precision=None, model=None)
    r = run("depth_decode", 2064, None)
    checker(2048, 2048, 4, 4)(r)
    res.runs = [r]
    notes = summarize(res, DepthPlan([2048], {2048: []}))
    assert len(notes) == 1 and notes[0].startswith("depth cache check blind on 1 of 1 depth runs")
