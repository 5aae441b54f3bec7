"""Run a sweep: for each variant, get its server (shared, running, or launched), run the plan,
record everything as it lands, and go on when a variant fails.

The runner is plain Python driven from a thread (the TUI's worker, or the CLI's main thread);
it reports through `on_event` and stops cleanly when `stop` is set or on KeyboardInterrupt,
saving the partial variant first. Either order measures each variant through
`execute.VariantRun` (sequential: `run_variant`; interleaved: sweep/interleave.py), and what
the runner adds to a variant (`_finished`) is the same for both.
"""

from __future__ import annotations

import dataclasses
import os
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from precmon.core import stops
from precmon.core.schema import Host, Preflight, Run, VariantResult
from precmon.core.stops import Cut
from precmon.measure.labels.build_facts import binary_path
from precmon.measure.nodes import expected_nodes
from precmon.measure.quality.reference import FILE_NAME as QUALITY_REF
from precmon.measure.quality.reference import QualityRefError, Reference, load_reference, save_reference
from precmon.measure.results import host_info
from precmon.power.base import EnergyMeter
from precmon.power.box import meminfo_now
from precmon.power.cpu import server_pids, url_port
from precmon.power.fleet import total_now
from precmon.servers.base import Server, ServerError
from precmon.servers.detect import make_server
from precmon.servers.kinds import with_kv_log
from precmon.servers.launch import ServerProcess
from precmon.sweep.argv_flags import flags_from_argv, kv_check
from precmon.sweep.events import (
    Log,
    Progress,
    SweepEvent,
    SweepFinished,
    VariantFinished,
    VariantStarted,
)
from precmon.sweep.execute import Context, Job, Outcome, run_variant
from precmon.sweep.interleave import run_interleaved
from precmon.sweep.kv_memory import kv_memory, kv_record
from precmon.sweep.launched import clear_launch, earlier_sweep, record_launch, stop_leftovers
from precmon.sweep.memory_fit import fit_metrics, memory_fit
from precmon.sweep.quality_step import NoReference, QualityJob
from precmon.sweep.resume import resume, variant_plan
from precmon.sweep.spec import SweepSpec, Variant
from precmon.sweep.store import FolderHasResults, ResultStore
from precmon.untrusted import file_part

EventFn = Callable[[SweepEvent], None]


class SweepRunner:
    def __init__(
        self,
        spec: SweepSpec,
        out_dir: Path,
        *,
        meter: EnergyMeter | None = None,
        host: Host | None = None,
        resume: bool = False,
        replan: bool = False,
        on_event: EventFn | None = None,
        stop: threading.Event | None = None,
        wrap_server: Callable[[Server], Server] | None = None,
        quality_for: Callable[[Variant], QualityJob | None] | None = None,
        notes: Sequence[str] = (),
        preflight: Preflight | None = None,
    ) -> None:
        """`quality_for`: a variant's quality step where the front end decides it (a bench: its
        `--quality`/`--quality-ref`), instead of the sweep file's baseline and `quality-ref.json`.
        `notes`: lines every variant keeps (what the front end found, e.g. no power source).
        `preflight`: the box as checked before the sweep (measure/trust/preflight.py): kept in
        `host.preflight`, its findings in every variant's `warnings`."""
        self._notes = tuple(notes)
        self._preflight = preflight
        self.reached = False  # some variant's server answered (else nothing was measured)
        self.spec, self.meter = spec, meter
        self._quality_for = quality_for or self._quality_job
        self.stop = stop or stops.Stop()
        self._emit = on_event or (lambda ev: None)
        # The TUI wraps each server so that quitting abandons the request in flight (tui/workers/background.py)
        self._wrap_server = wrap_server
        host = dataclasses.replace(host or host_info(), preflight=preflight)
        self.store = ResultStore(out_dir, spec.settings_dict(), host, on_note=lambda text: self._emit(Log(text)))
        self.resume, self.replan = resume, replan
        self.interrupted = False
        self._idle_ref_w: float | None = None
        self._launch_record: Path | None = None  # launched/<label>.json of the server running now
        # /proc/meminfo just before precmon started the server measured now (the memory fit's basis)
        self._meminfo_before: dict[str, int] | None = None

    @property
    def order(self) -> list[str]:
        return [v.label for v in self.spec.variants if v.label]

    def run(self) -> Path:
        """The sweep, holding its results folder (sweep/folder_lock.py) from before anything in it
        changes to the last write. Raises FolderBusy when another precmon has it, FolderHasResults
        when a fresh sweep finds an earlier one's results there, PlanChanged when `--resume` finds
        the folder measured with another plan (sweep/resume.py); nothing is done."""
        with self.store.held():
            out = self.store.out_dir
            if not self.resume and (earlier := earlier_sweep(out, lambda text: self._emit(Log(text)))):
                raise FolderHasResults(f"{earlier}: a new sweep there would overwrite or mix with it")
            return self._run()

    def _run(self) -> Path:
        done = resume(self.spec, self.store, self.replan, lambda text: self._emit(Log(text))) if self.resume else set()
        for note in stop_leftovers(self.store.out_dir):  # servers an earlier run (kill -9) left behind
            self._emit(Log(note))
        total = len(self.spec.variants)
        try:
            if self.spec.order == "interleaved":
                todo = [(i, v) for i, v in enumerate(self.spec.variants) if v.label not in done]
                cut = run_interleaved(todo, total, self._job, self._context(), self._finish_interleaved)
                self.interrupted = self.interrupted or cut
            else:
                self._run_sequential(done, total)
        except KeyboardInterrupt:  # between variants (a variant records its own): the sweep ends here
            stops.request(self.stop, Cut.INTERRUPTED)
            self.interrupted = True
        finally:
            path = self.store.write(self.order)
            self._emit(SweepFinished(path, self.interrupted))
        return path

    def _run_sequential(self, done: set[str], total: int) -> None:
        """Variants one after another, in file order (docs/design.md §6); with quality on, the
        baseline first, so every other variant finds its reference."""
        order = list(enumerate(self.spec.variants))
        if self.spec.scores_quality:
            order.sort(key=lambda iv: iv[1].label != self.spec.baseline_label)
        for n, (i, variant) in enumerate(order):
            if self.stop.is_set():
                self.interrupted = True
                break
            if variant.label in done:
                continue
            if n and self.meter is not None:
                self._cooldown()
            if variant.label:  # a bench's variant is named by its server, and announced once it is
                self._emit(VariantStarted(variant.label, i, total, variant.strategy, variant.precision, variant.model))
            self._save(self._run_variant(variant))
            if self.stop.is_set() or self.interrupted:
                self.interrupted = True
                break

    def _run_variant(self, v: Variant) -> VariantResult:
        self._launch_record, self._meminfo_before = None, None
        return self._finished(v, run_variant(self._job(v, _Launcher(self, v) if v.launch else None), self._context()))

    def _finish_interleaved(self, v: Variant, outcome: Outcome) -> None:
        self._save(self._finished(v, outcome))

    def _finished(self, v: Variant, outcome: Outcome) -> VariantResult:
        """What the runner adds to a measured variant, whichever order measured it: its strategy,
        a launched server's argv and flags, the KV cache's memory; a cut ends the sweep."""
        if outcome.cut is not None:
            self.interrupted = True
        self.reached = self.reached or outcome.reached
        result = outcome.result
        for note in self._notes:
            result.note(note)
        for line in self._preflight.findings if self._preflight is not None else ():
            result.warn(line)
        result.decisive_first()
        result.strategy = v.strategy
        result.plan = variant_plan(v, self.spec)  # what --resume compares (sweep/resume.py)
        if v.launch:
            result.launch = with_kv_log(v.launch)  # what ran (_Launcher.start adds -lv 4 where needed)
            result.server.launch_flags = flags_from_argv(result.launch) or None
        self._record_kv(v, result, outcome.log_path)
        if outcome.reached:  # a launched server is stopped by now: its basis is the memory before it
            before = self._meminfo_before if v.launch else None
            result.fit = memory_fit(result, before, [] if v.launch else self._server_pids(v))
            result.metrics.update(fit_metrics(result.fit))
        return result

    @staticmethod
    def _server_pids(v: Variant) -> list[int]:
        """The processes of the variant's server here (found by its port), for its memory."""
        port = url_port(v.url) if v.url else None
        return server_pids(port)[0] if port else []

    def _save(self, result: VariantResult) -> None:
        self.store.put_variant(result)
        self._emit(VariantFinished(result, self.store.write(self.order)))

    # ---- one variant ------------------------------------------------------------------------
    def _context(self) -> Context:
        return Context(self.meter, self.stop, self._emit, self._on_run)

    def _job(self, v: Variant, launch: _Launcher | None = None) -> Job:
        def connect() -> Server:
            server: Server = make_server(v.url, kind=v.server, api_key=_key(v), timeout_s=v.settings.timeout_s)
            return self._wrap_server(server) if self._wrap_server is not None else server

        return Job(
            v.settings,
            connect,
            v.url,
            v.server,
            model=v.model,
            label=v.label or None,  # "": a bench, named by its server (plan.variant_label)
            precision=v.precision,
            launch=launch,
            quality=self._quality_for(v),
            announce=not v.label,
            server_log=v.server_log,
            server_binary=binary_path(v.launch[0]) if v.launch else v.server_binary,
        )

    def _quality_job(self, v: Variant) -> QualityJob | None:
        """Quality scoring after the variant's plan (docs/design.md §4 "Quality"): the baseline
        writes `quality-ref.json`, every other variant with quality on scores against it."""
        baseline = self.spec.baseline_label
        is_base = v.label == baseline and self.spec.scores_quality
        settings = v.quality or (self.spec.quality if is_base else None)
        if settings is None:
            return None
        path = self.store.out_dir / QUALITY_REF

        def reference() -> Reference | None:
            if is_base:
                return None
            try:
                ref = load_reference(path)
            except QualityRefError as exc:
                raise NoReference(f"no reference from the baseline {baseline!r} ({exc})") from None
            if ref.label != baseline:
                raise NoReference(f"{QUALITY_REF} is from {ref.label!r}, the baseline is {baseline!r}")
            return ref

        def keep(ref: Reference, result: VariantResult) -> None:
            try:
                save_reference(path, ref)
                self._emit(Log(f"{v.label}: quality reference saved to {path}"))
            except OSError as exc:  # the scores stand; the other variants will say why they have none
                result.note(f"quality: the reference could not be saved to {path}: {exc.strerror or exc}")

        return QualityJob(settings, reference, keep, baseline)

    def _record_kv(self, v: Variant, result: VariantResult, log_path: Path | None) -> None:
        """The KV cache's memory (launched or declared variants, sweep/kv_memory.py); a declared
        `kv_cache_dtype`: recorded, and checked where the server tells its own."""
        if v.launch or v.kv_cache_dtype:
            metrics, result.kv_memory = kv_record(kv_memory(result.server.flags, log_path))
            result.metrics.update(metrics)
        if not v.kv_cache_dtype:
            return
        read_back, mismatch = kv_check(v.label, v.kv_cache_dtype, result.server.flags, log_path)
        result.kv_cache_dtype, result.kv_cache_read_back = v.kv_cache_dtype, read_back
        if mismatch:
            result.warn(mismatch)
            self._emit(Log(mismatch))

    def _on_run(self, label: str, run: Run) -> None:
        """Journal a run as it lands (`run_variant` posts its `RunLanded` after this)."""
        self.store.add_run(label, run)

    def _log_path(self, v: Variant) -> Path:
        """Where a launched variant's server writes its output (read back for its KV cache)."""
        return self.store.out_dir / "logs" / f"{file_part(v.label)}.log"

    def _cooldown(self) -> None:
        """Wait (bounded) until power is back near idle, so one variant's heat doesn't bill the next."""
        if self.meter is None or self.spec.cooldown_s <= 0:
            return
        ref = self._idle_reference()
        if ref is None:
            return
        deadline = time.monotonic() + self.spec.cooldown_s
        while time.monotonic() < deadline and not self.stop.is_set():
            w = self._headline_watts()
            if w is None or w <= ref * 1.10 + 2.0:
                return
            self._emit(Progress("cool-down", 0, 1, f"cooling down: {w:.0f} W, idle was {ref:.0f} W"))
            time.sleep(0.5)

    def _idle_reference(self) -> float | None:
        return self.store.idle_watts()

    def _headline_watts(self) -> float | None:
        if self.meter is None:
            return None
        return total_now(self.meter.channels(), self.meter.latest(), expected_nodes(self.meter))


class _Launcher:
    """A `launch` variant's own server (`execute.Launch`): started, recorded in the out folder
    while it runs (sweep/launched.py), stopped again on every way out."""

    def __init__(self, runner: SweepRunner, v: Variant) -> None:
        self.runner, self.v = runner, v

    def start(self) -> ServerProcess:
        runner, v = self.runner, self.v
        assert v.launch is not None
        argv = with_kv_log(v.launch)
        if argv != v.launch:
            added = " ".join(argv[len(v.launch) :])
            runner._emit(Log(f"{v.label}: adding {added}: its KV cache's size is logged only there (memory fit)"))
        proc = ServerProcess(argv, v.url, runner._log_path(v), ready_timeout_s=v.ready_timeout_s, env=v.env)
        runner._emit(Log(f"{v.label}: starting {' '.join(argv)}"))
        runner._meminfo_before = meminfo_now()
        proc.start()  # from here on, every way out of this method stops the server again
        if proc.proc is not None:  # so that a kill -9 of precmon leaves a name for --resume to stop
            runner._launch_record = record_launch(runner.store.out_dir, v.label, proc.proc.pid, v.launch)

        def waiting(s: float) -> None:
            if int(s * 5) % 25 == 0:
                runner._emit(Progress(v.label, 0, 1, f"waiting for the server to be ready ({s:.0f} s)"))
            if runner.stop.is_set():
                raise ServerError(stops.LAUNCH_STOPPED)

        try:
            waited = proc.wait_ready(waiting)
        except BaseException:  # not ready, Ctrl-C, SIGTERM: never leave it running
            proc.stop()
            clear_launch(runner._launch_record)
            raise
        runner._emit(Log(f"{v.label}: server ready after {waited:.1f} s"))
        return proc

    def stop(self, proc: ServerProcess) -> None:
        self.runner._emit(Log(f"{self.v.label}: stopping the launched server"))
        proc.stop()
        clear_launch(self.runner._launch_record)


def _key(v: Variant) -> str | None:
    if v.api_key is not None:
        return v.api_key
    if not v.api_key_env:
        return None
    key = os.environ.get(v.api_key_env)
    if key is None:
        raise ServerError(f"{v.label}: api_key_env {v.api_key_env} is not set")
    return key
