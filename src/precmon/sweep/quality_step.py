"""The steps after a variant's plan when quality is on (docs/design.md §4 "Quality", "Answer"):
score it against the reference (or make the reference, for the baseline), then ask it the fixed
question. `execute.VariantRun.finish` runs them; a Ctrl-C in them is recorded there, the one way.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from precmon.core.schema import VariantResult
from precmon.measure.answer import ask
from precmon.measure.quality.reference import FILE_NAME as QUALITY_REF
from precmon.measure.quality.reference import QualityRefError, Reference, load_reference, text_sha256
from precmon.measure.quality.run import measure_quality, unavailable
from precmon.measure.quality.settings import QualitySettings
from precmon.servers.base import Server
from precmon.sweep.events import Log, Progress, SweepEvent
from precmon.sweep.spec import SpecError, SweepSpec, load_spec

EmitFn = Callable[[SweepEvent], None]


#: `quality.reference` of a variant scored without a reference to score against: `--resume`
#: measures it again once the baseline is measured (sweep/resume.py).
MISSING_REFERENCE = "missing"


class NoReference(Exception):
    """There is no quality reference to score against; the message says why (one line)."""


@dataclass(frozen=True)
class QualityJob:
    """Quality scoring after the plan (docs/design.md §4 "Quality").

    Attributes:
        settings: positions, top-K and text.
        reference: returns the reference to score against, None for the baseline itself (its
            distributions become the reference); raises `NoReference` when there is none.
        keep: called with the new reference a baseline made (after its scores are applied):
            `bench` puts it in the results, a sweep writes `quality-ref.json`.
        baseline: the baseline's label for an n/a record (None: this variant's own).
    """

    settings: QualitySettings
    reference: Callable[[], Reference | None] = lambda: None
    keep: Callable[[Reference, VariantResult], None] | None = None
    baseline: str | None = None


def score_quality(
    q: QualityJob,
    server: Server,
    result: VariantResult,
    model: str | None,
    *,
    emit: EmitFn,
    stop: threading.Event,
) -> None:
    """Score quality after the plan (an n/a record with the reason where it cannot be)."""
    baseline = q.baseline or result.label
    if result.status == "failed":
        unavailable("the variant's plan failed", q.settings, baseline).apply(result)
        return
    try:
        reference = q.reference()
    except NoReference as exc:
        missing = unavailable(str(exc), q.settings, baseline)
        missing.info.reference = MISSING_REFERENCE
        missing.apply(result)
        return
    outcome = measure_quality(
        server,
        q.settings,
        label=result.label,
        model=model,
        reference=reference,
        say=lambda d, t, x: emit(Progress(result.label, d, t, x)),
        stop=stop,
    )
    outcome.apply(result)
    if outcome.reference is not None and q.keep is not None:
        q.keep(outcome.reference, result)


def record_answer(server: Server, result: VariantResult, model: str | None, emit: EmitFn) -> None:
    """The variant's answer to the fixed question (measure/answer.py), beside its quality scores."""
    emit(Progress(result.label, 0, 1, "answer"))
    answer = ask(server, model)
    result.answer = answer.to_dict()
    if answer.error:
        result.note(f"answer: {answer.error}")


def bench_quality(spec: SweepSpec | str | Path | None, results_dir: Path, emit: EmitFn) -> QualityJob | None:
    """Quality for the TUI's `b`, which has no flags of its own: on when the sweep file it was
    started with (`--sweep`) scores quality, with that file's [defaults] quality settings; the
    reference is the results folder's `quality-ref.json` (a sweep's baseline) where there is
    one, else this server is the baseline and its reference goes into the bench file as
    `quality_reference`, as `bench --quality` does."""
    if spec is None:
        return None
    if not isinstance(spec, SweepSpec):
        try:
            spec = load_spec(Path(spec))
        except SpecError as exc:
            emit(Log(f"bench: no quality scoring: {exc}"))
            return None
    if not spec.scores_quality:
        return None
    settings, path = spec.quality, results_dir / QUALITY_REF

    def reference() -> Reference | None:
        if not path.exists():
            return None
        try:
            ref = load_reference(path)
        except QualityRefError as exc:
            raise NoReference(str(exc)) from None
        if ref.text_sha256 != text_sha256(settings.text):
            raise NoReference(f"{path} was made from the text {ref.text!r}, not {settings.text_name}")
        return ref

    def keep(ref: Reference, result: VariantResult) -> None:
        result.quality_reference = ref.to_dict()

    return QualityJob(settings, reference, keep)
