"""One way to measure one variant, for every front end: launch its server if it has one, open
it, check it is healthy, run the bench plan, score quality, and hand on every run as it lands.

`precmon bench`, the TUI's `b`, a sweep (the TUI's `s`, `sweep --headless`, `precmon demo`) all
call `run_variant`; none builds a `Bench` itself (an import-linter contract in pyproject.toml
keeps it so). So what a variant is called (`plan.variant_label`), what an interrupt leaves
behind and whether quality is scored are decided here once, not per caller.

It sits in the sweep layer: above `precmon.measure` (the plan, quality) and `precmon.servers`
(opening and launching), below the front ends, and beside the sweep runner, which is one of its
callers.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from precmon.core.metric_keys import KEY
from precmon.measure.answer import ask
from precmon.measure.bench import Bench, BenchSettings
from precmon.measure.labels.true_label import LOG_READERS, record_log_compute_path
from precmon.measure.quality.reference import FILE_NAME as QUALITY_REF
from precmon.measure.quality.reference import QualityRefError, Reference, load_reference, text_sha256
from precmon.measure.quality.run import QualitySettings, measure_quality, unavailable
from precmon.measure.results import Run, VariantResult
from precmon.power.base import EnergyMeter
from precmon.power.gpu import capabilities_by_name
from precmon.servers.base import Server, ServerError
from precmon.servers.launch import ServerProcess
from precmon.sweep.events import Log, Progress, RunLanded, SweepEvent, VariantStarted
from precmon.sweep.kv_memory import read_log
from precmon.sweep.spec import SpecError, SweepSpec, load_spec
from precmon.untrusted import redact_url

#: What an interrupt (Ctrl-C, SIGTERM, SIGHUP) during the plan leaves in `errors`, whoever called.
INTERRUPTED = "interrupted (Ctrl-C): runs so far are kept"
#: ... and during quality scoring, after the plan: the speed results stand.
QUALITY_INTERRUPTED = "interrupted (Ctrl-C) during quality scoring: the speed results are kept"
#: A launched server that failed a request is given this long to be seen exited, so the variant
#: names the cause (the server died) and not only the symptom (a connection reset).
EXIT_GRACE_S = 2.0


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


class Launch(Protocol):
    """Starts a variant's own server (sweep `launch`) and stops it again."""

    def start(self) -> ServerProcess:
        """Start the server and wait until it is ready (raises ServerError when it is not)."""
        ...

    def stop(self, proc: ServerProcess) -> None:
        """Stop it (every way out of `run_variant` comes here once `start` returned)."""
        ...


@dataclass(frozen=True)
class Job:
    """One variant to measure.

    Attributes:
        connect: opens the variant's server (no request yet); raises ServerError.
        url, kind: where it is, for a variant that failed before its server answered.
        label: the user's label; None lets `plan.variant_label` decide from the server.
        launch: the variant's own server, started first (its readiness replaces the health check).
        announce: post `VariantStarted` once the label is known (a sweep announces its own).
        server_log: the server's own output where precmon knows it without launching it (the
            demo's router): read for its compute path, as a launched server's log is.
    """

    settings: BenchSettings
    connect: Callable[[], Server]
    url: str
    kind: str
    model: str | None = None
    label: str | None = None
    precision: str | None = None
    launch: Launch | None = None
    quality: QualityJob | None = None
    announce: bool = False
    server_log: Path | None = None


@dataclass
class Context:
    """What measuring shares with its caller: power, the stop event, and where events go."""

    meter: EnergyMeter | None = None
    stop: threading.Event = field(default_factory=threading.Event)
    emit: Callable[[SweepEvent], None] = lambda event: None
    on_run: Callable[[str, Run], None] | None = None  # the sweep's journal, before the event
    result: VariantResult | None = None  # the variant being measured (set by `run_variant`)


@dataclass(frozen=True)
class Outcome:
    """How it ended.

    Attributes:
        result: the variant, summarised, whatever happened (its errors say what).
        reached: its server answered healthy (False: nothing was measured; errors[0] says why).
        interrupted: a KeyboardInterrupt (Ctrl-C, or a signal turned into one) cut it short.
        crashed: an unexpected error (a bug, not a server's fault) ended it; the variant failed.
        log_path: a launched server's own output (read back for its KV cache), else None.
    """

    result: VariantResult
    reached: bool
    interrupted: bool = False
    crashed: bool = False
    log_path: Path | None = None


def check_healthy(server: Server, url: str) -> None:
    """Raise ServerError (the server closed) unless it answers healthy."""
    try:
        healthy = server.health()
    except ServerError:
        server.close()
        raise
    if not healthy:
        server.close()
        raise ServerError(f"{redact_url(url)}: the server answers but is not healthy (still loading a model?)")


def error_text(exc: BaseException) -> str:
    """One line for `errors`: a server's own words, or the exception's type and text (a bug)."""
    return str(exc) if isinstance(exc, ServerError) else f"{type(exc).__name__}: {exc}"


def open_bench(job: Job, ctx: Context, server: Server, announced: list[str] | None = None) -> Bench:
    """The variant's `Bench` on an open server, reporting through `ctx` (also used by the
    interleaved sweep, which runs the plans of several benches step by step). `announced`
    gets the label once `VariantStarted` was posted for it."""
    announced = [] if announced is None else announced

    def ready(label: str) -> None:  # the label is known once the server told its model
        if job.announce and not announced:
            announced.append(label)
            ctx.emit(VariantStarted(label, 0, 1, "bench"))

    def landed(run: Run) -> None:
        label = bench.result.label
        if ctx.on_run is not None:
            ctx.on_run(label, run)
        ctx.emit(RunLanded(label, run))

    bench = Bench(
        server,
        job.settings,
        model=job.model,
        label=job.label,
        precision=job.precision,
        meter=ctx.meter,
        stop=ctx.stop,
        progress=lambda d, t, x: ctx.emit(Progress(bench.result.label, d, t, x)),
        on_run=landed,
        on_ready=ready,
        launched=job.launch is not None,
    )
    return bench


def run_variant(job: Job, ctx: Context) -> Outcome:
    """Measure one variant (docs/design.md §4, §6): never raises for a server's fault or a bug
    (the variant records it); KeyboardInterrupt during the plan or quality is recorded the one
    way (`INTERRUPTED`, `QUALITY_INTERRUPTED`) and reported in the outcome, not re-raised."""
    proc: ServerProcess | None = None
    bench: Bench | None = None
    announced: list[str] = []
    launch = job.launch
    result = VariantResult(
        job.label or job.model or "server", job.precision, job.model, {"kind": job.kind, "url": job.url}
    )
    reached = interrupted = crashed = False
    try:
        if launch is not None:
            proc = launch.start()
        server = job.connect()
        if proc is None:
            check_healthy(server, job.url)
        reached = True
        bench = open_bench(job, ctx, server, announced)
        ctx.result = bench.result
        try:
            interrupted, crashed = _plan(bench)
            result = bench.result
            if not (interrupted or crashed or ctx.stop.is_set()) and job.quality is not None:
                interrupted = score_quality(job.quality, server, result, ctx, job.model)
                if not (interrupted or ctx.stop.is_set()) and result.status != "failed":
                    interrupted = record_answer(server, result, ctx, job.model)
        finally:
            server.close()
        if proc is not None:
            _launched_cause(
                proc, result, grace_s=EXIT_GRACE_S if result.status != "ok" and not ctx.stop.is_set() else 0
            )
        _compute_path(result, server.kind, proc.log_path if proc is not None else job.server_log, ctx.meter)
    except Exception as exc:  # noqa: BLE001 - one variant's failure, whatever it is, is recorded in it
        result = bench.result if bench is not None else result
        crashed = crashed or (reached and not isinstance(exc, ServerError))
        result.errors.append(error_text(exc))  # before the summary's "no valid decode run": this is the cause
        if bench is not None:
            _summarize(bench)
        result.status = "failed" if crashed or result.metrics.get(KEY.decode_tok_s) is None else "partial"
        if proc is not None and proc.exited_within(EXIT_GRACE_S):  # the cause, not only the symptom
            result.errors.insert(0, exited_line(proc))
        ctx.emit(Log(f"{result.label}: failed: {error_text(exc)}"))
    finally:
        if proc is not None and launch is not None:
            launch.stop(proc)
    if job.announce and reached and not announced:  # the plan failed early: its column still appears
        ctx.emit(VariantStarted(result.label, 0, 1, "bench"))
    return Outcome(result, reached, interrupted, crashed, proc.log_path if proc is not None else None)


def _plan(bench: Bench) -> tuple[bool, bool]:
    """Run the plan: (interrupted, crashed). A bug ends it like a server error does, keeping the
    runs before it, and fails the variant; the summary is made whatever happened."""
    try:
        bench.run()
        return False, False
    except KeyboardInterrupt:
        bench.stop.set()
        bench.result.errors.append(INTERRUPTED)
        _summarize(bench)
        return True, False
    except Exception as exc:  # noqa: BLE001 - the last line of defence: what was measured is kept
        bench.result.errors.append(error_text(exc))  # the summary puts causes first
        _summarize(bench)
        bench.result.status = "failed"
        return False, True


def _summarize(bench: Bench) -> None:
    try:
        bench.summarize()
    except Exception as exc:  # noqa: BLE001 - a summary that breaks must not cost the runs
        bench.result.status = "failed"
        bench.result.errors.append(f"unexpected error summarizing: {error_text(exc)}")


def score_quality(q: QualityJob, server: Server, result: VariantResult, ctx: Context, model: str | None) -> bool:
    """Score quality after the plan (an n/a record with the reason where it cannot be); returns
    whether a KeyboardInterrupt cut it short."""
    baseline = q.baseline or result.label
    if result.status == "failed":
        unavailable("the variant's plan failed", q.settings, baseline).apply(result)
        return False
    try:
        reference = q.reference()
    except NoReference as exc:
        unavailable(str(exc), q.settings, baseline).apply(result)
        return False
    try:
        outcome = measure_quality(
            server,
            q.settings,
            label=result.label,
            model=model,
            reference=reference,
            say=lambda d, t, x: ctx.emit(Progress(result.label, d, t, x)),
            stop=ctx.stop,
        )
    except KeyboardInterrupt:  # the speed results stand
        ctx.stop.set()
        result.errors.append(QUALITY_INTERRUPTED)
        return True
    outcome.apply(result)
    if outcome.reference is not None and q.keep is not None:
        q.keep(outcome.reference, result)
    return False


def record_answer(server: Server, result: VariantResult, ctx: Context, model: str | None) -> bool:
    """The variant's answer to the fixed question (measure/answer.py), beside its quality scores;
    returns whether a KeyboardInterrupt cut it short (the speed and quality results stand)."""
    ctx.emit(Progress(result.label, 0, 1, "answer"))
    try:
        answer = ask(server, model)
    except KeyboardInterrupt:
        ctx.stop.set()
        result.errors.append(QUALITY_INTERRUPTED)
        return True
    result.extra["answer"] = answer.to_dict()
    if answer.error:
        result.note(f"answer: {answer.error}")
    return False


def bench_quality(
    spec: SweepSpec | str | Path | None, results_dir: Path, emit: Callable[[SweepEvent], None]
) -> QualityJob | None:
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
        result.extra["quality_reference"] = ref.to_dict()

    return QualityJob(settings, reference, keep)


def _compute_path(result: VariantResult, kind: str, log_path: Path | None, meter: EnergyMeter | None = None) -> None:
    """The variant's compute path from its server's log (llama.cpp's or vLLM's:
    measure/labels/true_label.py), a CUDA device's SM from NVML where the log does not say it;
    its reason where there is none to read."""
    text = read_log(log_path) if log_path is not None and kind in LOG_READERS else None
    record_log_compute_path(result, kind, text, log_path, capabilities_by_name(meter))


def _launched_cause(proc: ServerProcess, result: VariantResult, grace_s: float) -> None:
    """A launched server that exited names itself as the cause; a failed one quotes its log."""
    if proc.exited_within(grace_s):
        result.errors.insert(0, exited_line(proc))  # the cause first: errors[0] is what is shown
        result.status = "failed" if result.metrics.get(KEY.decode_tok_s) is None else "partial"
    elif result.status == "failed":
        result.errors.append(f"server log: {proc.failure_log(5)}")


def exited_line(proc: ServerProcess) -> str:
    code = proc.proc.returncode if proc.proc is not None else None
    how = (
        f" (killed by signal {-code})"
        if code is not None and code < 0
        else (f" (exit code {code})" if code is not None else "")
    )
    return f"the launched server exited during the run{how}; {proc.failure_log(5)}"
