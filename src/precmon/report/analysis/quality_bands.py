"""Measured quality in words: which band a variant's KL and top-1 agreement fall in.

The advice (analysis/advice.py) uses these where a sweep or bench scored quality: a variant with a
visible loss is left out of the speed workloads, "maximum quality" becomes the fastest
near-lossless variant, and every choice quotes its measured figure before the document's typical
one (analysis/quality.py QUALITY_CAVEAT). The thresholds and why are `analysis.quality.QUALITY_BANDS`.
"""

from __future__ import annotations

from dataclasses import dataclass

from precmon.core.metric_keys import KEY
from precmon.report.analysis.quality import NEAR_LOSSLESS_KLD_NATS, NEAR_LOSSLESS_TOP1, SMALL_KLD_NATS
from precmon.report.fmt import format_value
from precmon.report.model import VariantDoc
from precmon.untrusted import visible

BASELINE_CHARS = 40

NEAR_LOSSLESS, SMALL, VISIBLE = "near-lossless", "small", "visible"


def band(kld_mean_nats: float, top1_agree: float | None) -> str:
    """near-lossless, small or visible (analysis.quality.QUALITY_BANDS)."""
    if kld_mean_nats <= NEAR_LOSSLESS_KLD_NATS and (top1_agree is None or top1_agree >= NEAR_LOSSLESS_TOP1):
        return NEAR_LOSSLESS
    return SMALL if kld_mean_nats <= SMALL_KLD_NATS else VISIBLE


@dataclass(frozen=True)
class Measured:
    """A variant's measured quality against its baseline."""

    kld_mean_nats: float
    top1_agree: float | None
    baseline: str

    @property
    def band(self) -> str:
        return band(self.kld_mean_nats, self.top1_agree)

    def figures(self) -> str:
        """'mean KL 0.0123 nats, top-1 agreement 97.1%'."""
        text = f"mean KL {format_value(self.kld_mean_nats)} nats"
        if self.top1_agree is not None:
            text += f", top-1 agreement {self.top1_agree:.1%}"
        return text

    def sentence(self) -> str:
        """'Measured vs F16: mean KL 0.0123 nats, top-1 agreement 97.1% (small loss).'"""
        words = self.band if self.band == NEAR_LOSSLESS else f"{self.band} loss"
        return f"Measured vs {self.baseline}: {self.figures()} ({words})."


def _number(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value != value or value < 0:
        return None
    return float(value)


def measured(variant: VariantDoc) -> Measured | None:
    """The variant's measured quality, or None where it was not scored (or is n/a)."""
    metrics = variant.get("metrics")
    if not isinstance(metrics, dict):
        return None
    kld = _number(metrics.get(KEY.quality_kld_mean))
    if kld is None:
        return None
    top1 = _number(metrics.get(KEY.quality_top1_agree))
    info = dict(variant).get("quality")  # beside `metrics` (docs/design.md §5); not a VariantDoc key
    base = info.get("baseline") if isinstance(info, dict) else None
    name = visible(base, limit=BASELINE_CHARS) if isinstance(base, str) else "baseline"
    return Measured(kld, top1 if top1 is None or top1 <= 1.0 else None, name)
