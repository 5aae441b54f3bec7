"""KL(baseline ‖ variant) over the baseline's top-K plus a rest bucket, on hand-made distributions.

Expected values are worked out by hand in the comments (docs/design.md §4 "Quality")."""

from __future__ import annotations

import math
import statistics

import pytest

from precmon.measure.quality.score import (
    Position,
    kl_parts,
    kl_position,
    missing_mass,
    perplexity,
    score,
    top1_err95,
)


def pos(probs: dict[int, float], own: float | None = None) -> Position:
    """A position from plain probabilities (listed most probable first, as a server does)."""
    top = sorted(((t, math.log(p)) for t, p in probs.items()), key=lambda x: -x[1])
    return Position(tuple(top), None if own is None else math.log(own))


BASE = pos({1: 0.5, 2: 0.3})  # rest 0.2


def test_identical_distributions_have_zero_kl():
    assert kl_position(BASE, BASE) == 0.0


def test_shared_tokens_and_the_rest_bucket():
    # 0.5 ln(0.5/0.4) + 0.3 ln(0.3/0.4) + 0.2 ln(0.2/0.2) = 0.111572 − 0.086305 + 0
    assert kl_position(BASE, pos({1: 0.4, 2: 0.4})) == pytest.approx(0.025267154, abs=1e-9)


def test_a_token_missing_from_the_variant_gets_its_unlisted_mass():
    # variant lists 1: 0.6, 3: 0.3 → unlisted 0.1, smallest listed 0.3 → q_2 = min(0.3, 0.1) = 0.1;
    # q_rest = 1 − 0.6 − 0.1 = 0.3 (token 3 is in the variant's rest as the baseline sees it).
    # 0.5 ln(0.5/0.6) + 0.3 ln(0.3/0.1) + 0.2 ln(0.2/0.3) = −0.091161 + 0.329584 − 0.081093
    assert kl_position(BASE, pos({1: 0.6, 3: 0.3})) == pytest.approx(0.15732989, abs=1e-8)


def test_a_missing_token_is_capped_by_the_variants_smallest_listed_probability():
    # variant lists 1: 0.9, 3: 0.02 → unlisted 0.08, but q_2 ≤ 0.02 (it was not listed above 3);
    # q_rest = 1 − 0.9 − 0.02 = 0.08.
    # 0.5 ln(0.5/0.9) + 0.3 ln(0.3/0.02) + 0.2 ln(0.2/0.08) = −0.293893 + 0.812415 + 0.183258
    assert kl_position(BASE, pos({1: 0.9, 3: 0.02})) == pytest.approx(0.70177988, abs=1e-8)


def test_several_missing_tokens_share_the_unlisted_mass():
    # baseline 1: 0.4, 2: 0.2, 3: 0.2 (rest 0.2); variant 1: 0.5, 4: 0.3 → unlisted 0.2 over 2
    # missing tokens = 0.1 each (below the smallest listed, 0.3); q_rest = 1 − 0.5 − 0.2 = 0.3.
    # 0.4 ln(0.4/0.5) + 2 · 0.2 ln(0.2/0.1) + 0.2 ln(0.2/0.3) = −0.089257 + 0.277259 − 0.081093
    base = pos({1: 0.4, 2: 0.2, 3: 0.2})
    assert kl_position(base, pos({1: 0.5, 4: 0.3})) == pytest.approx(0.10690843, abs=1e-8)
    assert missing_mass({1: 0.5, 4: 0.3}, 2) == pytest.approx(0.1)


def test_tokens_only_the_variant_lists_fall_in_its_rest_bucket():
    # variant 1: 0.5, 2: 0.3, 9: 0.2 (lists all its mass): token 9 is part of q_rest = 0.2 = p_rest
    assert kl_position(BASE, pos({1: 0.5, 2: 0.3, 9: 0.2})) == pytest.approx(0.0, abs=1e-12)


def test_nothing_left_for_a_missing_token_is_floored_not_infinite():
    # the variant lists 1: 1.0 → unlisted 0 → q_2 = 0, floored at 1e-12: a large finite KL
    kl = kl_position(BASE, Position(((1, 0.0),)))
    # and q_rest = 1 − 1 − 0 = 0 floored too: 0.5 ln(0.5/1) + 0.3 ln(0.3/1e-12) + 0.2 ln(0.2/1e-12)
    assert kl == pytest.approx(12.78585754, abs=1e-7)


def test_listed_mass_above_one_from_rounding_is_scaled_to_one():
    over = Position(((1, math.log(0.7)), (2, math.log(0.4))))  # 1.1 in all
    assert kl_position(over, over) == 0.0
    # scaled: p = 7/11, 4/11, rest 0; against 0.5 / 0.5:
    # (7/11) ln((7/11)/0.5) + (4/11) ln((4/11)/0.5) = 0.153467 − 0.115801
    assert kl_position(over, pos({1: 0.5, 2: 0.5})) == pytest.approx(0.03766541, abs=1e-8)


def test_argmax_ties_go_to_the_lower_id():
    assert Position(((7, -1.0), (3, -1.0), (5, -2.0))).argmax() == 3
    assert Position(()).argmax() is None


def test_score_mean_p99_and_top1_agreement():
    # position 1: identical (KL 0, same top); position 2: the variant's top token is 2, not 1
    other = pos({1: 0.4, 2: 0.45})
    s = score([BASE, BASE], [BASE, other])
    kl2 = kl_position(BASE, other)
    assert s.positions == 2
    assert s.kld_mean_nats == pytest.approx(kl2 / 2)
    assert s.kld_p99_nats == pytest.approx(0.99 * kl2)  # linear interpolation between 0 and kl2
    assert s.top1_agree == 0.5
    assert s.kld_nats == (0.0, kl2)
    assert s.base_topk_mass == pytest.approx(0.8)  # the baseline lists 0.5 + 0.3 of its mass


def test_perplexity_needs_every_own_logprob():
    # exp(−(ln 0.5 + ln 0.25) / 2) = exp(ln 8 / 2) = √8
    assert perplexity([pos({1: 0.5}, own=0.5), pos({1: 0.5}, own=0.25)]) == pytest.approx(math.sqrt(8))
    assert perplexity([pos({1: 0.5}, own=0.5), pos({1: 0.5})]) is None
    assert score([BASE], [pos({1: 0.5, 2: 0.3}, own=0.5)]).ppl == pytest.approx(2.0)


def test_score_refuses_lists_of_different_lengths():
    with pytest.raises(ValueError, match="1 positions with the baseline's 2"):
        score([BASE, BASE], [BASE])


def test_the_trusted_format_figures_as_llama_perplexity_defines_them():
    """PPL ratio = exp(mean ln p_base − ln p_var), RMS Δp of the own token, ± = 1.96 standard errors."""
    half, quarter = math.log(0.5), math.log(0.25)
    top = ((1, half), (2, half))
    base = [Position(top, half), Position(top, half)]
    var = [Position(((1, half), (2, half)), quarter), Position(((2, quarter), (1, math.log(0.75))), half)]
    s = score(base, var)
    assert s.ppl_ratio is not None and math.isclose(s.ppl_ratio, math.sqrt(2.0))
    # d = [ln 2, 0]: sample sd = ln2/√2, standard error = ln2/2
    assert s.ppl_ratio_err95 is not None and math.isclose(s.ppl_ratio_err95, math.sqrt(2.0) * 1.96 * math.log(2) / 2)
    assert s.rms_dp is not None and math.isclose(s.rms_dp, math.sqrt(0.0625 / 2))
    assert math.isclose(s.kld_max_nats, max(s.kld_nats)) and s.kld_max_nats > 0
    sd = statistics.stdev(s.kld_nats)
    assert math.isclose(s.kld_err95_nats, 1.96 * sd / math.sqrt(2))
    assert s.top1_agree == 1.0 and s.top1_err95 == 0.0  # a tie goes to the lower id: 1 both times
    assert math.isclose(top1_err95(0.9, 101), 1.96 * math.sqrt(0.9 * 0.1 / 100))  # binomial, n − 1


def test_no_own_logprob_no_ppl_ratio_or_rms():
    top = ((1, -0.1), (2, -2.4))
    s = score([Position(top, None)], [Position(top, -0.1)])
    assert (s.ppl_ratio, s.ppl_ratio_err95, s.rms_dp, s.rms_dp_err95) == (None, None, None, None)
    assert s.kld_err95_nats == 0.0 and s.top1_err95 == 0.0  # one position: no error to give


def test_the_tail_estimate_is_the_rest_times_the_listed_tokens_own_divergence():
    base = pos({1: 0.5, 2: 0.2, 3: 0.1})  # rest 0.2
    var = pos({1: 0.5, 2: 0.1, 3: 0.2})  # rest 0.2
    listed, tail = kl_parts(base, var)
    # listed: 0.2 ln(0.2/0.1) + 0.1 ln(0.1/0.2) + the rest 0.2 ln(0.2/0.2) = 0.1 ln 2
    assert listed == pytest.approx(0.1 * math.log(2), abs=1e-9)
    # the tokens but the baseline's top one, renormalized: p̂ = (2/3, 1/3), q̂ = (1/3, 2/3):
    # KL = 2/3 ln 2 + 1/3 ln(1/2) = 1/3 ln 2; times the rest 0.2
    assert tail == pytest.approx(0.2 * math.log(2) / 3, abs=1e-9)
    assert kl_position(base, var) == pytest.approx(listed + tail, abs=1e-12)
    assert kl_parts(base, base) == (0.0, 0.0)
    assert kl_parts(BASE, pos({1: 0.4, 2: 0.4}))[1] == 0.0  # one token besides the top: nothing to estimate from


def test_the_score_says_how_much_of_the_mean_is_the_tail_estimate():
    base, var = pos({1: 0.5, 2: 0.2, 3: 0.1}), pos({1: 0.5, 2: 0.1, 3: 0.2})
    s = score([base, base], [var, base])
    assert s.kld_tail_nats == pytest.approx(0.2 * math.log(2) / 6, abs=1e-9)
    assert s.kld_mean_nats == pytest.approx((0.1 * math.log(2) + 0.2 * math.log(2) / 3) / 2, abs=1e-9)
