"""How far a variant's next-token distribution moved from the baseline's (docs/design.md §4 "Quality").

Pure arithmetic over teacher-forced positions: per position the top-K log-probabilities a server
gave, and the log-probability of the text's own next token where it gave one. A server never
gives the whole vocabulary, so the KL is taken over the baseline's top-K tokens plus one bucket
for everything else, plus an estimate of what the bucket hides (`kl_parts`); a baseline token the
variant did not list gets the largest probability its list allows (`missing_mass`), so no term is
inflated by a guess.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from precmon.core.stats import percentile

#: A mass a server rounded to exactly 0 (or below) is floored here, so ln(p/q) stays finite.
FLOOR = 1e-12


@dataclass(frozen=True)
class Position:
    """One teacher-forced position: the next-token distribution given the text so far.

    Attributes:
        top: (token id, log-probability), most probable first, as many as the server listed (≤ K).
        own_logprob: log-probability of the text's actual next token (None: not given).
    """

    top: tuple[tuple[int, float], ...]
    own_logprob: float | None = None

    def argmax(self) -> int | None:
        """The most probable listed token; a tie goes to the lower id (None for an empty list)."""
        if not self.top:
            return None
        best = max(lp for _, lp in self.top)
        return min(tok for tok, lp in self.top if lp == best)


@dataclass(frozen=True)
class QualityScore:
    """A variant against the baseline over the same positions (docs/design.md §4 "Quality").

    Attributes:
        kld_mean_nats: mean over positions of KL(baseline ‖ variant).
        kld_p99_nats: 99th percentile of the per-position KL (linear interpolation).
        top1_agree: fraction of positions whose most probable tokens are the same id.
        positions: positions compared.
        ppl: the variant's perplexity on the text (None unless every position has `own_logprob`).
        kld_nats: the per-position KL, in position order.
        base_topk_mass: mean over positions of the probability the baseline's top-K holds: how
            much of the distribution the KL saw (near 1 on a trained model's peaked distributions;
            K ÷ vocabulary on a random-weight model's flat ones, where the KL is far below the
            full-vocabulary one).
    """

    kld_mean_nats: float
    kld_p99_nats: float
    top1_agree: float
    positions: int
    ppl: float | None
    kld_nats: tuple[float, ...]
    base_topk_mass: float = 1.0
    # The trusted format (llama-perplexity --kl-divergence's figures; `err95` = half the 95%
    # interval, 1.96 standard errors, where llama-perplexity prints 1 standard error):
    kld_err95_nats: float = 0.0
    kld_max_nats: float = 0.0
    top1_err95: float = 0.0
    ppl_ratio: float | None = None
    ppl_ratio_err95: float | None = None
    rms_dp: float | None = None
    rms_dp_err95: float | None = None
    #: The part of `kld_mean_nats` that is the tail estimate (`kl_parts`), not listed tokens.
    kld_tail_nats: float = 0.0


def _masses(top: Sequence[tuple[int, float]]) -> dict[int, float]:
    """{token: probability}, scaled down to a total of 1 when rounding pushed it above."""
    probs: dict[int, float] = {}
    for tok, lp in top:
        probs.setdefault(tok, math.exp(lp) if math.isfinite(lp) else 0.0)
    total = sum(probs.values())
    if total > 1.0:
        probs = {t: p / total for t, p in probs.items()}
    return probs


def missing_mass(variant: dict[int, float], n_missing: int) -> float:
    """The probability given to each of `n_missing` baseline tokens the variant did not list.

    The true value is at most the variant's smallest listed probability (it was not listed) and,
    all together, at most the variant's unlisted mass; this is the largest value within both.
    """
    if n_missing <= 0:
        return 0.0
    unlisted = max(0.0, 1.0 - sum(variant.values()))
    smallest = min(variant.values()) if variant else 1.0
    return min(smallest, unlisted / n_missing)


def _within(p: dict[int, float], q: dict[int, float]) -> float:
    """KL between p and q each renormalized over the tokens both list, the baseline's most
    probable left out (0 with fewer than two such tokens)."""
    shared = [t for t in list(p)[1:] if t in q and p[t] > 0.0 and q[t] > 0.0]
    if len(shared) < 2:
        return 0.0
    p_sum, q_sum = sum(p[t] for t in shared), sum(q[t] for t in shared)
    kl = sum(p[t] / p_sum * math.log((p[t] / p_sum) / (q[t] / q_sum)) for t in shared)
    return max(0.0, kl)


def kl_parts(base: Position, variant: Position) -> tuple[float, float]:
    """(listed, tail): KL(baseline ‖ variant) in nats over the baseline's top-K tokens plus a rest
    bucket, and the estimate of what merging the rest into one bucket left out.

    Listed: `p_i ln(p_i / q_i)` for each token the baseline listed, then `p_rest ln(p_rest / q_rest)`
    with `p_rest = 1 − Σ p_i`, `q_rest = 1 − Σ q_i` over the same tokens; never negative, and never
    above the full-vocabulary KL (merging tokens can only lower it). Tail: the bucket's own
    tokens diverge among themselves too; they are taken to diverge as much as the listed tokens
    other than the most probable do among themselves: `p_rest × KL(p̂ ‖ q̂)` over those tokens,
    each side renormalized (docs/design.md §4 "Quality" has its measured bias).
    """
    p = _masses(base.top)
    q_listed = _masses(variant.top)
    missing = [t for t in p if t not in q_listed]
    fill = missing_mass(q_listed, len(missing))
    q = {t: q_listed.get(t, fill) for t in p}
    kl = 0.0
    for tok, p_i in p.items():
        if p_i > 0.0:
            kl += p_i * math.log(p_i / max(q[tok], FLOOR))
    p_rest = max(0.0, 1.0 - sum(p.values()))
    q_rest = max(0.0, 1.0 - sum(q.values()))
    if p_rest > 0.0:
        kl += p_rest * math.log(p_rest / max(q_rest, FLOOR))
    tail = p_rest * _within(p, q_listed) if p_rest > 0.0 else 0.0
    return max(0.0, kl), tail  # rounding of a near-identical pair can dip a hair below 0


def kl_position(base: Position, variant: Position) -> float:
    """KL(baseline ‖ variant) in nats at one position: the listed part plus the tail estimate."""
    listed, tail = kl_parts(base, variant)
    return listed + tail


def perplexity(positions: Sequence[Position]) -> float | None:
    """exp(−mean own log-probability); None unless every position has one."""
    own = [p.own_logprob for p in positions]
    if not own or any(lp is None or not math.isfinite(lp) for lp in own):
        return None
    return math.exp(-sum(lp for lp in own if lp is not None) / len(own))


#: Standard errors in half a 95% interval (normal: hundreds of positions).
Z95 = 1.96


def mean_err95(xs: Sequence[float]) -> tuple[float, float]:
    """(mean, half its 95% interval): 1.96 × the sample standard deviation ÷ √n (0 for n < 2)."""
    n = len(xs)
    mean = sum(xs) / n
    if n < 2:
        return mean, 0.0
    var = sum((x - mean) ** 2 for x in xs) / (n - 1)
    return mean, Z95 * math.sqrt(var / n)


def top1_err95(agree: float, n: int) -> float:
    """Half the 95% interval of a share `agree` of `n` positions (binomial, as llama-perplexity)."""
    return Z95 * math.sqrt(agree * (1.0 - agree) / (n - 1)) if n > 1 else 0.0


def _own_pairs(base: Sequence[Position], variant: Sequence[Position]) -> list[tuple[float, float]] | None:
    """(baseline, variant) log-probability of the text's own token per position; None unless all have both."""
    pairs = [(b.own_logprob, v.own_logprob) for b, v in zip(base, variant, strict=True)]
    if any(b is None or v is None or not math.isfinite(b) or not math.isfinite(v) for b, v in pairs):
        return None
    return [(float(b or 0.0), float(v or 0.0)) for b, v in pairs]


def own_token_figures(
    base: Sequence[Position], variant: Sequence[Position]
) -> tuple[float | None, float | None, float | None, float | None]:
    """(PPL ratio, its err95, RMS Δp, its err95), llama-perplexity's way; Nones without own log-probs.

    PPL(variant) ÷ PPL(baseline) = exp(mean of ln p_base − ln p_variant over the text's own tokens),
    its error by the delta method (ratio × the mean's error); Δp = p_variant − p_base of the own
    token, RMS = √mean(Δp²), its error = the error of mean(Δp²) ÷ (2 RMS).
    """
    pairs = _own_pairs(base, variant)
    if not pairs:
        return None, None, None, None
    ln_ratio, ln_err = mean_err95([b - v for b, v in pairs])
    ratio = math.exp(ln_ratio)
    ms, ms_err = mean_err95([(math.exp(v) - math.exp(b)) ** 2 for b, v in pairs])
    rms = math.sqrt(ms)
    return ratio, ratio * ln_err, rms, (ms_err / (2.0 * rms) if rms > 0 else 0.0)


def score(base: Sequence[Position], variant: Sequence[Position]) -> QualityScore:
    """Compare a variant's positions with the baseline's, position by position.

    Raises:
        ValueError: no positions, or the two lists differ in length.
    """
    if not base or len(base) != len(variant):
        raise ValueError(f"cannot compare {len(variant)} positions with the baseline's {len(base)}")
    parts = [kl_parts(b, v) for b, v in zip(base, variant, strict=True)]
    kld = [listed + tail for listed, tail in parts]
    agree = sum(1 for b, v in zip(base, variant, strict=True) if b.argmax() is not None and b.argmax() == v.argmax())
    p99 = percentile(kld, 99.0)
    mean, err = mean_err95(kld)
    ratio, ratio_err, rms, rms_err = own_token_figures(base, variant)
    return QualityScore(
        kld_mean_nats=mean,
        kld_p99_nats=p99 if p99 is not None else 0.0,
        top1_agree=agree / len(kld),
        positions=len(kld),
        ppl=perplexity(variant),
        kld_nats=tuple(kld),
        base_topk_mass=sum(min(1.0, sum(_masses(b.top).values())) for b in base) / len(base),
        kld_err95_nats=err,
        kld_max_nats=max(kld),
        top1_err95=top1_err95(agree / len(kld), len(kld)),
        ppl_ratio=ratio,
        ppl_ratio_err95=ratio_err,
        rms_dp=rms,
        rms_dp_err95=rms_err,
        kld_tail_nats=sum(tail for _, tail in parts) / len(parts),
    )
