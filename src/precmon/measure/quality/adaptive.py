"""Adaptive top-K: list per position as many tokens as hold TARGET_MASS of the baseline's probability.

A server never gives the whole vocabulary; the KL over the listed tokens plus one rest bucket can
only be lower than the full one, and most where the distribution is flat. On SmolLM2-135M
against `llama-perplexity --kl-divergence` (docs/benchmarks.md "Quality: adaptive top-K"), a fixed
top-20 read 0.62-0.63× the full-vocabulary KL (the top-20 held 0.78 of the probability), top-100
0.81×; listing per position the tokens that hold 0.95 read 0.89-0.90×, with the median position
needing ~135 tokens. So the baseline asks for up to `top_k_max` tokens at each position and keeps
the fewest that hold TARGET_MASS (at least the configured K, so top-1 and a short tail are always
there); a variant asks at each position for as many as the baseline kept there.

The servers' caps: llama.cpp's `n_probs` takes the whole vocabulary; vLLM refuses more than its
`--max-logprobs` (default 20), so the baseline is asked at most that and a note names the flag.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from precmon.core.settings import QUALITY_TARGET_MASS, QUALITY_TOP_K_MAX
from precmon.measure.quality.score import Position

#: The share of the baseline's probability the listed tokens should hold at each position.
TARGET_MASS = QUALITY_TARGET_MASS
#: The most tokens asked per position (the JSON grows with it; 0.95 needs ~300 on average on
#: SmolLM2, and more than 1,000 only on the flattest positions).
TOP_K_MAX = QUALITY_TOP_K_MAX


def kept(position: Position, target_mass: float, k_min: int) -> int:
    """How many of the position's tokens (most probable first) hold `target_mass`, at least `k_min`."""
    total = 0.0
    for i, (_, lp) in enumerate(position.top):
        total += math.exp(lp)
        if total >= target_mass and i + 1 >= k_min:
            return i + 1
    return len(position.top)


def trim(positions: Sequence[Position], target_mass: float, k_min: int) -> list[Position]:
    """Each position cut to the tokens that hold `target_mass` (at least `k_min`)."""
    return [Position(p.top[: kept(p, target_mass, k_min)], p.own_logprob) for p in positions]


def cut_to(positions: Sequence[Position], sizes: Sequence[int]) -> list[Position]:
    """A variant's positions, each cut to the size the baseline kept there (same order, same length)."""
    return [Position(p.top[:k], p.own_logprob) for p, k in zip(positions, sizes, strict=True)]


def mean_mass(positions: Sequence[Position]) -> float:
    """Mean over positions of the probability the listed tokens hold."""
    if not positions:
        return 0.0
    return sum(min(1.0, sum(math.exp(lp) for _, lp in p.top)) for p in positions) / len(positions)


def align(base: Sequence[Position], variant: Sequence[Position]) -> list[Position]:
    """The baseline's positions, each cut to the variant's list where that is shorter (a server
    that lists fewer, as vLLM's --max-logprobs or precmon's own cap on it): both sides of the KL
    then count the same number of tokens, and the tail estimate the rest (score.py `kl_parts`)."""
    return [
        Position(b.top[: len(v.top)], b.own_logprob) if len(v.top) < len(b.top) else b
        for b, v in zip(base, variant, strict=True)
    ]
