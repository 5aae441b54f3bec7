"""Score one variant's quality against the baseline, after its speed plan (docs/design.md §4).

`measure_quality` tokenizes the text on the variant's own server, asks for the teacher-forced
top-K at each scored position (measure/quality/gather.py) and compares them with the reference
(measure/quality/score.py). Without a reference the variant *is* the baseline: its distributions
become the reference, and its own scores are 0 KL and full agreement by definition. Nothing
here records a run or touches the speed metrics: it runs after them, with its own progress line.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field

from precmon.core import registry, stops
from precmon.core.metric_keys import KEY
from precmon.core.schema import Quality, VariantResult
from precmon.measure.quality.adaptive import align
from precmon.measure.quality.fetch import QualityStopped, QualityUnavailable, check_supported
from precmon.measure.quality.gather import Fetched, SayFn, gather
from precmon.measure.quality.reference import Reference, text_sha256
from precmon.measure.quality.score import Position, QualityScore, score
from precmon.measure.quality.settings import QualitySettings
from precmon.measure.quality.windows import LLAMA_PERPLEXITY, WINDOW_TOKENS
from precmon.servers.base import ServerError

#: Below this mean top-K mass the KL saw too little of the distribution to be more than a bound.
LOW_TOPK_MASS = 0.5
#: Fewer scored positions than this (and than were asked for) make no estimate: a 2-token text
#: scores one position, whose "KL 0, same top 100%" says nothing. A warning then, on every screen.
MIN_ESTIMATE_POSITIONS = 64
FEW_POSITIONS_CODE = "quality-few:"
#: The metric keys this module fills (core/registry.py; the rest of a variant's quality facts
#: go to its `quality` object).
METRIC_KEYS = (
    KEY.quality_kld_mean,
    KEY.quality_kld_p99,
    KEY.quality_top1_agree,
    KEY.quality_ppl,
    # the trusted format (llama-perplexity --kl-divergence's figures)
    KEY.quality_kld_mean_err95,
    KEY.quality_kld_max,
    KEY.quality_top1_agree_err95,
    KEY.quality_ppl_ratio,
    KEY.quality_ppl_ratio_err95,
    KEY.quality_rms_dp,
    KEY.quality_rms_dp_err95,
)


@dataclass
class QualityOutcome:
    """What scoring gave: the metrics, the `quality` facts, and a new reference (baseline only)."""

    metrics: dict[str, float | None]
    info: Quality
    reference: Reference | None = None
    warnings: list[str] = field(default_factory=list)

    def apply(self, result: VariantResult) -> None:
        """Put the scores into the variant: metrics beside the speed ones, facts under `quality`."""
        result.metrics.update(self.metrics)
        result.quality = self.info
        for line in self.warnings:
            result.warn(line)
        if self.info.reason:
            result.note(f"quality: {self.info.reason}")


def unavailable(reason: str, settings: QualitySettings, baseline: str, convention: str | None = None) -> QualityOutcome:
    """n/a cells with the reason (no server support, no reference, a stop...)."""
    info = Quality(
        baseline=baseline,
        positions=0,
        top_k=settings.top_k,
        text=settings.text_name,
        reason=reason,
        convention=convention or settings.convention,
    )
    return QualityOutcome(dict.fromkeys(METRIC_KEYS), info)


def _round(key: str, value: float | None) -> float | None:
    return None if value is None else round(value, registry.digits(key))


def measure_quality(
    server: object,
    settings: QualitySettings,
    *,
    label: str,
    model: str | None,
    reference: Reference | None,
    say: SayFn | None = None,
    stop: threading.Event | None = None,
) -> QualityOutcome:
    """Score the variant on `server` (the baseline itself when `reference` is None).

    Never raises for a server's fault: the outcome's cells are n/a and `info["reason"]` says why.
    """
    baseline = reference.label if reference is not None else label
    convention = reference.convention if reference is not None else settings.convention
    started = time.monotonic()
    try:
        srv = check_supported(server)
        got = gather(srv, settings, model, reference, say, stop)
    except QualityUnavailable as exc:
        return unavailable(str(exc), settings, baseline, convention)
    except QualityStopped:
        cut_by = stops.cut_of(stop) if stop is not None else None
        return unavailable(stops.QUALITY_WORDS[cut_by or stops.Cut.STOPPED], settings, baseline, convention)
    except ServerError as exc:
        return unavailable(f"a quality request failed: {exc}", settings, baseline, convention)
    positions, notes = got.positions, got.notes
    new_ref = _baseline_reference(label, model, srv.kind, settings, got, convention) if reference is None else None
    base_positions = align(list(reference.positions), positions) if reference is not None else positions
    s = score(base_positions, positions)
    info = Quality(
        baseline=baseline,
        positions=s.positions,
        top_k=reference.top_k if reference is not None else got.top_k,
        text=settings.text_name,
        text_sha256=text_sha256(settings.text),
        seconds=round(time.monotonic() - started, 3),
        baseline_topk_mass=round(s.base_topk_mass, 6),
        # adaptive top-K (measure/quality/adaptive.py): the share aimed at, the tokens listed on average
        topk_target_mass=settings.target_mass,
        top_k_listed_mean=round(sum(len(p.top) for p in base_positions) / len(base_positions), 1),
        convention=convention,
        kld_tail_nats=_round(KEY.quality_kld_mean, s.kld_tail_nats),
    )
    if convention == LLAMA_PERPLEXITY:
        info.windows, info.window_tokens = len(got.windows.windows), len(got.windows.windows[0].tokens)
    if (note := _low_mass_note(s, base_positions)) is not None:
        notes.append(note)
    if reference is not None:
        info.baseline_ppl = _round(KEY.quality_ppl, score(base_positions, base_positions).ppl)
    info.notes = notes or None
    if s.ppl is None:
        info.ppl_reason = "the server did not give the text's own token log-probability at every position"
    values = {k: _round(k, v) for k, v in _values(s).items()}
    return QualityOutcome(values, info, new_ref, _few(s.positions, settings))


def _baseline_reference(
    label: str, model: str | None, kind: str, settings: QualitySettings, got: Fetched, convention: str
) -> Reference:
    """The baseline's own distributions, kept as the reference the other variants are scored against."""
    return Reference(
        label, model, kind, settings.text_name, text_sha256(settings.text), got.windows.tokens, got.top_k,
        tuple(got.positions), convention, WINDOW_TOKENS, got.windows.bos,
    )  # fmt: skip


def _low_mass_note(s: QualityScore, base_positions: Sequence[Position]) -> str | None:
    """Where the baseline's top-K held too little of the probability for the KL to be more than a
    lower bound, the note that says so; else None."""
    if s.base_topk_mass < LOW_TOPK_MASS:
        return (
            f"the baseline's top-{max(len(p.top) for p in base_positions)} holds {s.base_topk_mass:.2%} "
            "of the probability on average: "
            "the KL is a lower bound here (raise quality_top_k, or see docs/design.md §4 Quality)"
        )
    return None


def _values(s: QualityScore) -> dict[str, float | None]:
    """The metric cells of a score (METRIC_KEYS)."""
    return {
        KEY.quality_kld_mean: s.kld_mean_nats,
        KEY.quality_kld_p99: s.kld_p99_nats,
        KEY.quality_top1_agree: s.top1_agree,
        KEY.quality_ppl: s.ppl,
        KEY.quality_kld_mean_err95: s.kld_err95_nats,
        KEY.quality_kld_max: s.kld_max_nats,
        KEY.quality_top1_agree_err95: s.top1_err95,
        KEY.quality_ppl_ratio: s.ppl_ratio,
        KEY.quality_ppl_ratio_err95: s.ppl_ratio_err95,
        KEY.quality_rms_dp: s.rms_dp,
        KEY.quality_rms_dp_err95: s.rms_dp_err95,
    }


def _few(scored: int, settings: QualitySettings) -> list[str]:
    """The `quality-few:` warning where too few positions were scored for an estimate."""
    if scored >= min(settings.positions, MIN_ESTIMATE_POSITIONS):
        return []
    n = f"{scored} position{'s' if scored != 1 else ''}"
    return [
        f"{FEW_POSITIONS_CODE} {n} scored, not {settings.positions} (the text or its reference holds no more): "
        "its KL and top-1 agreement are no estimate"
    ]
