"""Measured quality in words a user can act on: near-lossless, small, noticeable, large, or
"cannot be judged" with why and what to do (docs/design.md §4 "Quality").

A band needs both figures: the mean KL says how far the whole distribution moved, top-1
agreement ("same top") how often greedy decoding would write another token; a variant takes the
worse of its two bands. The thresholds come from llama-perplexity --kl-divergence's own figures
for known quants of LLaMA 3 8B against FP16 (llama.cpp tools/perplexity/README.md, Wikitext-2):

    quant   mean KLD  same top      quant   mean KLD  same top
    q8_0    0.0014    97.7%         q4_K_M  0.031     91.9%
    q6_K    0.0055    96.0%         q4_0    0.072     (n/p)
    q5_K_M  0.011     (n/p)         q3_K_M  0.102     (n/p)
    q2_K    0.445     71.1%         (LLaMA 2 7B: q4_K_M 0.0127 / 94.7%, q2_K 0.109 / 85.6%)

so near-lossless (KL ≤ 0.01 and same top ≥ 95%) is the 8- and 6-bit class, small (≤ 0.05, ≥ 90%)
the good 4-5-bit k-quants, noticeable (≤ 0.15, ≥ 80%) the legacy 4-bit and 3-bit quants, and large
beyond: 2-bit, where greedy text visibly changes at more than one token in five.

A figure cannot be judged when it saw too little: the baseline's listed tokens held less than half
of the probability (a random-weight or very flat model: the top-K KL is then a lower bound that can
be 1,000× too small), fewer than MIN_POSITIONS positions were scored, or the 95% intervals reach two
bands apart. The advice (analysis/advice.py) never picks such a variant, or a noticeable or large
one, for a speed workload while a judged, usable one exists — and the baseline, the reference, is
always one where it was measured.
"""

from __future__ import annotations

from dataclasses import dataclass

from precmon.core.metric_keys import KEY
from precmon.core.schema import Quality, VariantResult
from precmon.report.fmt import format_spread, format_value
from precmon.untrusted import visible

BASELINE_CHARS = 40

NEAR_LOSSLESS, SMALL, NOTICEABLE, LARGE = "near-lossless", "small", "noticeable", "large"
UNJUDGEABLE = "cannot be judged"
#: Judged bands, best first; USABLE ones may be chosen for a speed workload.
ORDER = (NEAR_LOSSLESS, SMALL, NOTICEABLE, LARGE)
USABLE = frozenset({NEAR_LOSSLESS, SMALL})

#: (band, the largest mean KL in nats, the least top-1 agreement) — see the module docstring.
EDGES = ((NEAR_LOSSLESS, 0.01, 0.95), (SMALL, 0.05, 0.90), (NOTICEABLE, 0.15, 0.80))
#: Below this mean mass of the baseline's listed tokens the KL saw too little to be judged.
MIN_TOPK_MASS = 0.5
#: Fewer positions than this: one unusual sentence decides the figure.
MIN_POSITIONS = 64

QUALITY_BANDS = (
    "near-lossless: mean KL ≤ 0.01 nats and same top ≥ 95%; small: ≤ 0.05 and ≥ 90%; noticeable: "
    "≤ 0.15 and ≥ 80%; large: beyond (a variant takes the worse of its KL and same-top bands). Why: "
    "llama-perplexity's figures for LLaMA 3 8B put q8_0 (0.0014, 97.7%) and q6_K (0.0055, 96.0%) "
    "near-lossless, q4_K_M (0.031, 91.9%) small, q4_0 (0.072) and q3_K_M (0.10) noticeable, q2_K "
    f"(0.445, 71.1%) large. Cannot be judged: the baseline's top-K held < {MIN_TOPK_MASS:.0%} of the "
    f"probability, fewer than {MIN_POSITIONS} positions, or 95% intervals two bands apart. The advice "
    "picks for a speed workload only a variant judged near-lossless or small while one exists, else "
    "the baseline (the reference: its quality holds by definition), naming the variants it passed over; "
    "for maximum quality the fastest near-lossless one."
)


def _kl_band(kld: float) -> int:
    return next((i for i, (_, kl_max, _) in enumerate(EDGES) if kld <= kl_max), len(EDGES))


def _top1_band(top1: float | None) -> int:
    if top1 is None:
        return 0  # unknown: judged on KL alone
    return next((i for i, (_, _, t_min) in enumerate(EDGES) if top1 >= t_min), len(EDGES))


def band(kld_mean_nats: float, top1_agree: float | None) -> str:
    """The worse of the KL band and the same-top band (EDGES; edges belong to the better band)."""
    return ORDER[max(_kl_band(kld_mean_nats), _top1_band(top1_agree))]


@dataclass(frozen=True)
class Verdict:
    """A band, or UNJUDGEABLE with `why` (what the figure lacks) and `todo` (what to do)."""

    word: str
    why: str = ""
    todo: str = ""

    @property
    def judged(self) -> bool:
        return self.word != UNJUDGEABLE

    @property
    def usable(self) -> bool:
        return self.word in USABLE


@dataclass(frozen=True)
class Measured:
    """A variant's measured quality against its baseline (the file's figures; None: not there)."""

    kld_mean_nats: float
    top1_agree: float | None
    baseline: str
    kld_err95_nats: float | None = None
    top1_err95: float | None = None
    positions: int | None = None
    topk_mass: float | None = None
    top_k: int | None = None

    def verdict(self) -> Verdict:
        """The band, or why it cannot be judged (module docstring)."""
        if self.topk_mass is not None and self.topk_mass < MIN_TOPK_MASS:
            k = f"top-{self.top_k}" if self.top_k else "top-K"
            return Verdict(
                UNJUDGEABLE,
                f"the baseline's {k} held {self.topk_mass:.1%} of the probability, too little for the KL "
                "(a random-weight or very flat model)",
                "score again with adaptive top-K (precmon's default: up to 1000 tokens a position; vLLM needs "
                "--max-logprobs 1000), or score a trained model: a flat distribution needs most of the vocabulary",
            )
        if self.positions is not None and self.positions < MIN_POSITIONS:
            return Verdict(
                UNJUDGEABLE,
                f"only {self.positions} positions were scored",
                f"score at least {MIN_POSITIONS} (quality_positions; a longer --quality-text)",
            )
        central = band(self.kld_mean_nats, self.top1_agree)
        worst = band(
            self.kld_mean_nats + (self.kld_err95_nats or 0.0),
            None if self.top1_agree is None else self.top1_agree - (self.top1_err95 or 0.0),
        )
        if ORDER.index(worst) - ORDER.index(central) >= 2:
            return Verdict(
                UNJUDGEABLE,
                f"the 95% intervals reach from {central} to {worst}: too few positions for the error",
                "score more positions (4× the positions halves the error)",
            )
        return Verdict(central)

    @property
    def band(self) -> str:
        """The verdict's word (a band or UNJUDGEABLE)."""
        return self.verdict().word

    def figures(self) -> str:
        """'mean KL 0.0123 ± 0.0011 nats, same top 97.1 ± 1.4%'."""
        err = f" {format_spread(self.kld_mean_nats, self.kld_err95_nats, prose=True)}" if self.kld_err95_nats else ""
        text = f"mean KL {format_value(self.kld_mean_nats)}{err} nats"
        if self.top1_agree is not None:
            terr = f" ± {self.top1_err95 * 100:.1f}" if self.top1_err95 else ""
            text += f", same top {self.top1_agree * 100:.1f}{terr}%"
        return text

    def sentence(self) -> str:
        """'Measured vs F16: mean KL …, same top …% (small loss).' or '… (cannot be judged: why; todo).'"""
        v = self.verdict()
        if not v.judged:
            words = f"cannot be judged: {v.why}; {v.todo}"
        else:
            words = v.word if v.word == NEAR_LOSSLESS else f"{v.word} loss"
        return f"Measured vs {self.baseline}: {self.figures()} ({words})."


def _number(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value != value or value < 0:
        return None
    return float(value)


def measured(variant: VariantResult) -> Measured | None:
    """The variant's measured quality, or None where it was not scored (or is n/a)."""
    metrics = variant.metrics
    kld = _number(metrics.get(KEY.quality_kld_mean))
    if kld is None:
        return None
    top1 = _number(metrics.get(KEY.quality_top1_agree))
    info = variant.quality or Quality()  # beside `metrics` (docs/design.md §5)
    base = info.baseline
    name = visible(base, limit=BASELINE_CHARS) if isinstance(base, str) else "baseline"
    positions, top_k = _number(info.positions), _number(info.top_k)
    return Measured(
        kld,
        top1 if top1 is None or top1 <= 1.0 else None,
        name,
        _number(metrics.get(KEY.quality_kld_mean_err95)),
        _number(metrics.get(KEY.quality_top1_agree_err95)),
        None if positions is None else int(positions),
        _number(info.baseline_topk_mass),
        None if top_k is None else int(top_k),
    )
