"""One way to measure one variant, for every front end: launch its server if it has one, open
it, check it is healthy, run the bench plan, score quality, and hand on every run as it lands.

`precmon bench`, the TUI's `b`, a sweep (the TUI's `s`, `sweep --headless`, `precmon demo`) all
call `run_variant`; none builds a `Bench` itself (an import-linter contract in pyproject.toml
keeps it so). An interleaved sweep (sweep/interleave.py) runs several plans step by step, so it
drives the same `VariantRun` in its parts: `open`, `prepare` + `step` for each step, `finish`.
So what a variant is called (`plan.variant_label`), what a cut (core/stops.py) or a failure
leaves behind, whether quality is scored and what the variant records are decided here once,
not per caller or per order.

It sits in the sweep layer: above `precmon.measure` (the plan, quality) and `precmon.servers`
(opening and launching), below the front ends, and beside the sweep runner, which is one of its
callers.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from precmon.core import stops
from precmon.core.metric_keys import KEY
from precmon.core.schema import Run, ServerInfo, VariantResult
from precmon.core.stops import Cut
from precmon.measure.bench import Bench, BenchSettings, Stopped
from precmon.measure.labels.true_label import LOG_READERS, record_log_compute_path
from precmon.measure.plan import Step
from precmon.measure.prompts import PromptError
from precmon.power.base import EnergyMeter
from precmon.power.gpu import capabilities_by_name
from precmon.servers.base import Server, ServerError
from precmon.servers.launch import ServerProcess
from precmon.sweep.events import Log, Progress, RunLanded, SweepEvent, VariantStarted
from precmon.sweep.kv_memory import read_log
from precmon.sweep.quality_step import QualityJob, record_answer, score_quality
from precmon.untrusted import redact_url

#: A launched server that failed a request is given this long to be seen exited, so the variant
#: names the cause (the server died) and not only the symptom (a connection reset).
EXIT_GRACE_S = 2.0
#: What ends a step the variant's own way: the server's fault, a prompt that cannot be made.
SERVER_FAULTS = (ServerError, PromptError)


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
    """What measuring shares with its caller (one for a whole sweep): power, the stop event
    (a `core.stops.Stop` says why it was set), and where events go."""

    meter: EnergyMeter | None = None
    stop: threading.Event = field(default_factory=stops.Stop)
    emit: Callable[[SweepEvent], None] = lambda event: None
    on_run: Callable[[str, Run], None] | None = None  # the sweep's journal, before the event


@dataclass(frozen=True)
class Outcome:
    """How it ended.

    Attributes:
        result: the variant, summarised, whatever happened (its errors say what).
        reached: its server answered healthy (False: nothing was measured; errors[0] says why).
        cut: stopped or interrupted (Ctrl-C, SIGTERM, SIGHUP) before it was done; None if not.
        crashed: an unexpected error (a bug, not a server's fault) ended it; the variant failed.
        log_path: a launched server's own output (read back for its KV cache), else None.
    """

    result: VariantResult
    reached: bool
    cut: Cut | None = None
    crashed: bool = False
    log_path: Path | None = None

    @property
    def interrupted(self) -> bool:
        """Ctrl-C, SIGTERM or SIGHUP cut it short: the command exits 130."""
        return self.cut is Cut.INTERRUPTED


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
    return str(exc) if isinstance(exc, SERVER_FAULTS) else f"{type(exc).__name__}: {exc}"


def run_variant(job: Job, ctx: Context) -> Outcome:
    """Measure one variant (docs/design.md §4, §6), its plan in one go: never raises for a
    server's fault, a bug or a KeyboardInterrupt; the variant records each (`VariantRun`)."""
    run = VariantRun(job, ctx)
    if run.open():
        run.run_plan()
    return run.finish()


class VariantRun:
    """One variant on its way through the orchestration, whatever the sweep's order.

    `open` (launch, connect, health, its Bench), then the plan (`run_variant`: `Bench.run` at
    once; an interleaved sweep: `prepare`, then `step` for each step), then `finish` (summary,
    quality, answer, a launched server's cause, compute path, stopping the launched server).
    Each part records what ends it, the same way for both: a server's fault in the variant's
    errors, a bug as `Type: message` (the variant failed), a cut in core/stops.py's words.
    """

    def __init__(self, job: Job, ctx: Context) -> None:
        self.job, self.ctx = job, ctx
        self._result = VariantResult(
            job.label or job.model or "server", job.precision, job.model, ServerInfo(kind=job.kind, url=job.url)
        )
        self.proc: ServerProcess | None = None
        self.server: Server | None = None
        self.bench: Bench | None = None
        self.steps: list[Step] = []  # the plan, for `step` (after `prepare`)
        self.reached = self.crashed = False
        self.cut: Cut | None = None  # set when a KeyboardInterrupt landed in this variant
        self._plan_ended = self._scoring = False
        self._announced: list[str] = []

    @property
    def result(self) -> VariantResult:
        return self.bench.result if self.bench is not None else self._result

    def _opened(self) -> Bench:
        assert self.bench is not None, "open() first"
        return self.bench

    # ---- the parts --------------------------------------------------------------------------
    def open(self) -> bool:
        """Start its server (a `launch` variant), connect, check health, make its Bench; False
        when the server was not reached (recorded; `finish` gives the outcome)."""
        job = self.job

        def connect() -> None:
            if job.launch is not None:
                self.proc = job.launch.start()
            self.server = job.connect()
            if self.proc is None:
                check_healthy(self.server, job.url)

        if not self.guard(connect):
            return False
        assert self.server is not None
        self.reached = True
        self.bench = self._bench(self.server)
        return True

    def run_plan(self) -> bool:
        """The whole plan at once (`Bench.run`, adaptive repeats too); False when something
        other than the plan's own end stopped it (recorded)."""
        return self.guard(self._opened().run)

    def prepare(self) -> bool:
        """Before a plan run step by step: `Bench.start` (model facts, sizes, tokenizer, idle
        power), then its steps. False when that ended it (recorded)."""
        bench = self._opened()

        def start() -> None:
            bench.start()
            self.steps = bench.plan()

        return self.guard(start)

    def step(self, step: Step, order_index: int) -> bool:
        """One step of `steps`, its model switched in first (one endpoint serves them all);
        False when it ended this variant's plan (recorded)."""
        bench = self._opened()
        return self.guard(lambda: bench.run_step(step, switch=True, extra={"order_index": order_index}))

    def steps_done(self) -> None:
        """Every step of `steps` ran: the plan is complete."""
        self._opened().plan_completed = True

    def guard(self, part: Callable[[], Any]) -> bool:
        """Run one part; whatever ends it is recorded in the variant. True when it ran through."""
        try:
            part()
            return True
        except Stopped:  # the stop event: `finish` records the cut
            return False
        except KeyboardInterrupt:
            self._interrupted()
        except Exception as exc:  # noqa: BLE001 - one variant's failure, whatever it is, is recorded in it
            self._failed(exc)
        return False

    def finish(self) -> Outcome:
        """Everything after the plan, however it ended; never raises (a Ctrl-C in it is recorded)."""
        job, ctx = self.job, self.ctx
        if self.bench is not None:
            self.guard(self._end_plan)
        server = self.server
        if server is not None and self.reached:
            if self._clean() and job.quality is not None:
                self._quality_stage(job.quality, server)
            self.guard(server.close)
        proc = self.proc
        if proc is not None:
            grace = EXIT_GRACE_S if self.result.status != "ok" and not ctx.stop.is_set() else 0
            self.guard(lambda: _launched_cause(proc, self.result, grace_s=grace))
        if server is not None and self.reached:
            log = proc.log_path if proc else job.server_log
            self.guard(lambda: _compute_path(self.result, server.kind, log, ctx.meter))
        if proc is not None and job.launch is not None:
            launch = job.launch
            self.guard(lambda: launch.stop(proc))
        if job.announce and self.reached and not self._announced:  # failed early: its column still appears
            ctx.emit(VariantStarted(self.result.label, 0, 1, "bench"))
        cut = self.cut or stops.cut_of(ctx.stop)
        return Outcome(self.result, self.reached, cut, self.crashed, proc.log_path if proc is not None else None)

    # ---- how each way out is recorded -------------------------------------------------------
    def _clean(self) -> bool:
        return not (self.cut or self.crashed or self.ctx.stop.is_set())

    def _end_plan(self) -> None:
        """The plan is over: a cut says so in the variant, then the summary (idempotent)."""
        bench = self._opened()
        cut = self.cut or stops.cut_of(self.ctx.stop)
        if cut is not None and not bench.plan_completed:
            stops.record(bench.result.errors, cut)
        try:
            bench.end()
        except Exception as exc:  # noqa: BLE001 - a summary that breaks must not cost the runs
            bench.result.status = "failed"
            bench.result.errors.append(f"unexpected error summarizing: {error_text(exc)}")
        self._plan_ended = True
        if self.crashed:
            bench.result.status = "failed"

    def _quality_stage(self, q: QualityJob, server: Server) -> None:
        """Quality, then the answer, after a plan nothing cut short; a Ctrl-C in either keeps the
        speed results (`QUALITY_WORDS`)."""
        result, ctx, model = self.result, self.ctx, self.job.model
        self._scoring = True
        self.guard(lambda: score_quality(q, server, result, model, emit=ctx.emit, stop=ctx.stop))
        if self._clean() and result.status != "failed":
            self.guard(lambda: record_answer(server, result, model, ctx.emit))
        self._scoring = False

    def _interrupted(self) -> None:
        """A KeyboardInterrupt (Ctrl-C, SIGTERM, SIGHUP) landed here: the stop is set for every
        other part and variant, and this variant says it once, in its part's words."""
        self.cut = Cut.INTERRUPTED
        stops.request(self.ctx.stop, Cut.INTERRUPTED)
        words = stops.QUALITY_WORDS if self._scoring else stops.PLAN_WORDS
        stops.record(self.result.errors, Cut.INTERRUPTED, words)
        if self.bench is None:  # nothing measured; a plan's summary (or its quality's) keeps its status
            self._settle()

    def _failed(self, exc: Exception) -> None:
        """A part raised: the server's fault (its words) or, once the server answered, a bug
        (`Type: message`; the variant fails, keeping its runs)."""
        self.crashed = self.crashed or (self.reached and not isinstance(exc, SERVER_FAULTS))
        result = self.result
        result.errors.append(error_text(exc))  # before the summary's "no valid decode run": this is the cause
        if self.bench is None or self._plan_ended:
            self._settle()
        self.ctx.emit(Log(f"{result.label}: failed: {error_text(exc)}"))

    def _settle(self) -> None:
        """The status of a variant whose summary is made already (or that has none)."""
        result = self.result
        result.status = "failed" if self.crashed or result.metrics.get(KEY.decode_tok_s) is None else "partial"

    def _bench(self, server: Server) -> Bench:
        """The variant's `Bench` on an open server, reporting through the context."""
        job, ctx, announced = self.job, self.ctx, self._announced

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
