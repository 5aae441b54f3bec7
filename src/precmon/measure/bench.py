"""The bench executor for one variant: it runs the plan's steps (idle power, warm-up, decode,
prefill sizes, TTFT, and the optional long-context, depth and concurrency runs) and emits runs.

The plan itself is pure (measure/plan.py: steps from the settings and the server's facts,
measure/server_facts.py), each request and its power window is `request.measure_request`, and
the numbers come from the idempotent summary (measure/summary.py). Front ends never build a
`Bench`: `precmon.sweep.execute.run_variant` does. Every run is handed to `on_run` the moment it
lands (the sweep journals it, the TUI fills a cell), so nothing measured is ever only in memory.
"""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Callable
from typing import Any

from precmon.core import phases
from precmon.core.metric_keys import KEY
from precmon.core.phases import CONCURRENCY, WARMUP
from precmon.core.schema import PowerIdle, Run, ServerInfo, VariantResult
from precmon.core.settings import BenchSettings
from precmon.measure.concurrency.run import level
from precmon.measure.depth import run as depth_run
from precmon.measure.depth.slots import erase_slots
from precmon.measure.depth.steps import tolerance
from precmon.measure.plan import (
    DEPTH,
    Sizes,
    Step,
    Stopped,
    enough_repeats,
    plan_sizes,
    plan_steps,
    repeats_key,
    request_count,
    variant_label,
)
from precmon.measure.prompts import Prompt, PromptBuilder
from precmon.measure.request import Measurement, PhaseMeter, measure_idle, measure_request
from precmon.measure.server_facts import chat_template, prompt_builder, read_server
from precmon.measure.summary import Added, PlanFacts, summarize
from precmon.measure.trust.probe import ValidityProbe, probe_for
from precmon.power.base import EnergyMeter
from precmon.servers.base import Server, ServerError, StreamResult

ProgressFn = Callable[[int, int, str], None]
RunFn = Callable[[Run], None]


class Bench:
    """Runs the plan against one server and model. Construct, then call `run()`."""

    def __init__(
        self,
        server: Server,
        settings: BenchSettings,
        *,
        model: str | None = None,
        label: str | None = None,
        precision: str | None = None,
        meter: EnergyMeter | None = None,
        progress: ProgressFn | None = None,
        on_run: RunFn | None = None,
        stop: threading.Event | None = None,
        launched: bool = False,
        on_ready: Callable[[str], None] | None = None,
    ) -> None:
        """`launched`: precmon started this server (a sweep variant's `launch`), so its caches
        are precmon's to empty (measure/depth/slots.py). `on_ready` gets the variant's label
        (`plan.variant_label`) once the server has said what it serves, before idle power."""
        self.server, self.s, self.model = server, settings, model
        self.launched = launched
        self.meter, self.stop = meter, stop or threading.Event()
        self._progress, self._on_run, self._on_ready = progress, on_run, on_ready
        self._label = label
        self.result = VariantResult(
            label=variant_label(label, model, None),
            precision=precision,
            model=model,
            server=ServerInfo(kind=server.kind, url=server.url, endpoint=settings.endpoint),
        )
        self._steps_done, self._steps_total = 0, 1
        self.plan_completed = False
        self.sizes = Sizes()  # what fits the server's context (measure/plan.py), set by `start`
        self.builder: PromptBuilder | None = None
        self.power = PhaseMeter(meter)  # the phase windows (measure/request.py)
        self._added = Added()  # what the last summary added (measure/summary.py)
        self._step_extra: dict[str, Any] = {}  # added to the runs of the step in progress
        self.probe: ValidityProbe | None = None  # CPU/GPU readings for the validity checks
        self._probe_done = False  # its last reading was taken (`end`)

    # ---- plumbing ---------------------------------------------------------------------------
    def _say(self, text: str, step: bool = False) -> None:
        if step:
            self._steps_done += 1
        if self._progress:
            self._progress(self._steps_done, self._steps_total, text)

    def _record(self, run: Run) -> None:
        run.extra = dataclasses.replace(run.extra, **self._step_extra)
        self.result.runs.append(run)
        if self._on_run:
            self._on_run(run)

    def _check_stop(self) -> None:
        if self.stop.is_set():
            raise Stopped()

    def _power(self, phase: str, run: Run, sres: StreamResult | None = None) -> None:
        """Close `phase`'s power window and write its measurement into `run`."""
        self.power.end_into(phase, run, sres)

    # ---- plan -------------------------------------------------------------------------------
    def run(self) -> None:
        """The whole plan. Raises what ends it (Stopped, ServerError, PromptError, ...): the
        orchestration (sweep/execute.py `VariantRun`) records that in the variant, the one place
        that does, and then calls `end` for the summary."""
        self.start()
        if self.s.target_ci_pct is None:
            for step in self.plan():
                self.run_step(step)
        else:  # adaptive repeats: how many runs a phase gets is decided as they land
            self._run_adaptive()
        self.plan_completed = True

    def end(self) -> None:
        """After the last step, however the plan ended (run whole, or step by step by an
        interleaved sweep): the validity probe's last reading, once, then the summary."""
        if self.probe is not None and not self._probe_done:
            self._probe_done = True
            self.probe.finish()
        self.summarize()

    def start(self) -> None:
        """What comes before the requests: model info, sizes that fit, tokenizer, the validity
        probe (CPU/GPU readings), idle power, and on chat the template's size (after idle power,
        so that its request does not warm the idle window)."""
        self._prepare()
        self.probe = probe_for(self.server.url, self.meter)
        self._idle()
        if self.s.endpoint == "chat":
            assert self.builder is not None
            self._say("chat endpoint: measuring the chat template's tokens")
            chat_template(self.server, self.builder, self.model, self.s.timeout_s, self.result)

    def plan(self) -> list[Step]:
        """The requests of the plan, in the order `run` makes them (after `start`)."""
        s = self.s
        return plan_steps(s.warmup, s.repeats, s.decode_prompt_tokens, s.output_tokens, self.sizes, list(s.concurrency))

    def run_step(self, step: Step, *, switch: bool = False, extra: dict[str, Any] | None = None) -> None:
        """One step of `plan()`. Raises Stopped, ServerError or PromptError as `run` would see them.

        Args:
            switch: make this variant's model the loaded one first (an interleaved sweep
                alternates models on one endpoint; load time must not land in a measured request).
            extra: keys added to the `extra` of the run(s) this step records (`order_index`).
        """
        self._step_extra = dict(extra or {})
        try:
            if switch:
                self._check_stop()
                self.server.ensure_loaded(self.model, timeout_s=max(self.s.timeout_s, 300.0))
            # every step on empty slots: cells other requests left behind are attended over (slots.py)
            self._empty_slots(depth_step=step.phase == DEPTH)
            if step.phase == DEPTH:
                assert self.builder is not None
                flags = self.result.server.flags or {}
                tol = tolerance(self.server.kind, flags, self.builder.template_tokens)
                depth_run.run_depth(
                    self._one,
                    self.builder,
                    self.sizes.depth,
                    step.size,
                    self.s.repeats,
                    step.max_tokens,
                    tol,
                    empty=lambda: self._empty_slots(depth_step=True),
                )
                return
            if step.phase != CONCURRENCY:
                self._one(step.phase, step.size, step.max_tokens, step.repeat)
                return
            n = step.size
            self._check_stop()
            self._say(f"concurrency {n}: {n} simultaneous streams (#{step.repeat + 1})")
            assert self.builder is not None
            flags = self.result.server.flags or {}  # llama.cpp /props says its slots
            run = level(
                self.server, self.builder, self.s, self.model, flags.get("total_slots"), n, step.repeat, self.power
            )
            self._record(run)
            self._say(f"concurrency {n}: {run.extra.total_tok_s or 'failed'} tok/s total", step=True)
        finally:
            self._step_extra = {}

    def _empty_slots(self, depth_step: bool) -> None:
        """Erase a launched llama-server's slots (measure/depth/slots.py). A refusal is told once,
        when it happens; a shared server's at its first depth step, which checks the effect."""
        flags = self.result.server.flags or {}
        self.result.validity = validity_figs = self.result.validity or {}
        note = erase_slots(self.server, self.launched, flags.get("total_slots"), validity_figs)
        if note and (self.launched or depth_step) and note not in self.result.notes:
            self.result.note(note)

    def _prepare(self) -> None:
        """The server's facts (measure/server_facts.py), and from them the plan's sizes."""
        s = self.s
        self._say("checking the server")
        self.server.ensure_loaded(self.model, timeout_s=max(s.timeout_s, 300.0))
        info = read_server(self.server, self.model, self._label, self.result, self.launched)
        ctx = info.context_tokens if info else None
        sizes = plan_sizes(
            list(s.prefill_tokens), s.ttft_tokens, list(s.long_context_tokens), list(s.depth), s.output_tokens, ctx
        )
        for size in sizes.skipped_prefill:  # planned, beyond the context: the key stays, null
            self.result.metrics[KEY.prefill_ms_per_token][str(size)] = None
        if sizes.skipped_ttft and not sizes.ttft:  # measured at the largest size that fits, else null
            self.result.metrics[KEY.ttft_s][str(sizes.skipped_ttft)] = None
        for note in sizes.notes:
            self.result.note(note)
        self.sizes = sizes
        self.builder = prompt_builder(self.server, self.model, self.result)
        self._steps_total = request_count(s.warmup, s.repeats, sizes, list(s.concurrency)) + (1 if self.meter else 0)
        if self._on_ready is not None:
            self._on_ready(self.result.label)

    def _idle(self) -> None:
        if self.meter is None:
            return
        self._say(f"idle power: {self.s.idle_s:.0f} s with no load")
        run = measure_idle(self.power, self.s.idle_s, self._check_stop)
        self.result.metrics[KEY.power_idle_w] = run.power_w
        self.result.power_idle = PowerIdle(
            run.power_w,
            run.extra.power_channel,
            run.extra.power_windows,
            run.extra.power_w_per_s,
            run.extra.power_by_node,
            run.extra.nodes_missing,
        )
        self._say("idle power measured", step=True)

    def _one(
        self,
        phase: str,
        prompt_tokens: int,
        max_tokens: int,
        repeat: int,
        *,
        prompt: Prompt | Callable[[], Prompt] | None = None,
        reuse_prefix: bool = False,
        check: Callable[[Run], None] | None = None,
    ) -> Run:
        """One request of `prompt_tokens` (or the `prompt` given, or made by the function given:
        context depth, whose prefix is served from the cache with `reuse_prefix`), timed, powered
        and recorded; `check` judges the run before it is recorded (measure/depth/steps.py)."""
        self._check_stop()
        assert self.builder is not None
        built = prompt is None  # a depth prompt is longer than its new tokens by design
        try:  # the server's tokenizer sizes the prompt: its requests can fail like the measured one
            if prompt is None:
                prompt = self.builder.build(prompt_tokens)
            elif not isinstance(prompt, Prompt):
                prompt = prompt()
        except ServerError as exc:
            return self._failed(phase, prompt_tokens, repeat, exc, check)
        if built and self.builder.template_tokens and (prompt.expected_tokens or 0) > prompt_tokens:
            self._note_once(
                f"{phase} prompts are longer than {prompt_tokens} tokens (their runs have the real count): "
                f"the chat template ({self.builder.template_tokens} tokens) and the nonce alone take more"
            )
        self._say(f"{phase} {prompt_tokens} tokens → {max_tokens} (#{repeat + 1})")
        probe = self.probe
        try:
            run, sres, measured = measure_request(
                self.server,
                self.power,
                phase,
                prompt,
                max_tokens,
                self.model,
                self.s.timeout_s,
                repeat=repeat,
                endpoint=self.s.endpoint,
                reuse_prefix=reuse_prefix,
                before=probe.before_run if probe is not None else None,
            )
        except ServerError as exc:
            return self._failed(phase, prompt_tokens, repeat, exc, check)
        self._take_in(run, sres, measured, prompt)
        if check is not None:
            check(run)
        self._record(run)
        self._say(f"{phase} {prompt_tokens}: " + (_brief(run) if run.ok else f"invalid: {run.reason}"), step=True)
        return run

    def _take_in(self, run: Run, sres: StreamResult, measured: Measurement | None, prompt: Prompt) -> None:
        """What a measured request brings besides its timing: the adapter's notes, the run's energy,
        the validity probe's figures after it, and the prompt builder's words-per-token calibration."""
        assert self.builder is not None
        for note in sres.notes:  # what the adapter changed about the request (a refused field)
            self._note_once(note)
        if measured is not None and self.meter is not None:
            measured.apply(run, self.meter, sres)
        if self.probe is not None:
            self.probe.after_run(run)
        if self.builder.count_tokens is None and run.prompt_tokens:  # None when the count was impossible
            n_words = len(prompt.text.split()) - 1
            self.builder.calibrate(n_words, run.prompt_tokens - self.builder.template_tokens)

    def _note_once(self, note: str) -> None:
        """Add a note to the variant unless it already holds it (every run of a phase may say it)."""
        if note not in self.result.notes:
            self.result.note(note)

    def _failed(
        self, phase: str, prompt_tokens: int, repeat: int, exc: ServerError, check: Callable[[Run], None] | None
    ) -> Run:
        """Record the failed run of a request the server did not answer (a refused connection, a
        5xx, a timeout: whichever of its requests it was), then raise `exc` unless the server only
        rejected this one request (e.g. too long), where the plan goes on and the run is returned."""
        run = Run(
            phase=phase,
            prompt_tokens=None,
            output_tokens=None,
            ok=False,
            reason=str(exc),
            target_prompt_tokens=prompt_tokens,
            repeat=repeat,
        )
        if check is not None:
            check(run)
        self._record(run)
        self._say(f"{phase} failed: {exc}", step=True)
        if exc.rejected_request:
            return run
        raise exc

    def _run_adaptive(self) -> None:
        """The plan with `target_ci_pct`: each phase and size repeats until its CI is narrow enough
        (`_repeat`); warm-up and concurrency steps are those of `plan()`. Sequential order only
        (the sweep file refuses `order = "interleaved"` with a CI target)."""
        for step in self.plan():
            if step.phase in (WARMUP, CONCURRENCY, DEPTH):
                self.run_step(step)
            elif step.repeat == 0:  # the first repeat of a phase and size: `_repeat` makes them all
                self._repeat(step.phase, step.size, step.max_tokens, repeats_key(step.phase, step.size))

    def _repeat(self, phase: str, prompt_tokens: int, max_tokens: int, key: str) -> None:
        """`repeats` runs of one phase and size; with `target_ci_pct`, more until the 95% CI of the
        phase's headline field is narrow enough or `max_repeats` runs were made (`plan.enough_repeats`).
        The adaptive case records what stopped it in `repeats_stopped_by[key]` and the run count
        in `repeats_n[key]` (`key`: `plan.repeats_key`)."""
        s = self.s
        values: list[float | None] = []
        while (verdict := enough_repeats(values, s.repeats, s.target_ci_pct, s.max_repeats)) != "planned":
            if verdict is not None:
                return self._stopped(key, verdict, len(values))
            if len(values) >= s.repeats:
                self._steps_total += 1  # a repeat beyond the plan
            run = self._one(phase, prompt_tokens, max_tokens, len(values))
            values.append(getattr(run, phases.TARGET_FIELD[phase]) if run.ok else None)

    def _stopped(self, key: str, by: str, n: int) -> None:
        self.result.repeats_stopped_by = {**(self.result.repeats_stopped_by or {}), key: by}
        self.result.repeats_n = {**(self.result.repeats_n or {}), key: n}

    # ---- summary ----------------------------------------------------------------------------
    def summarize(self) -> None:
        """The variant's numbers and status from its runs (measure/summary.py); run it again
        after more runs or errors and it replaces what it said before, nothing else."""
        facts = PlanFacts(self.sizes, tuple(self.s.concurrency), self.plan_completed)
        self._added = summarize(self.result, facts, self.probe, self._added)


def _brief(run: Run) -> str:
    if (run.phase == WARMUP or run.phase in phases.DECODE_WINDOW) and run.decode_tok_s:
        return f"{run.decode_tok_s:.1f} tok/s"
    if run.prefill_ms_per_token is not None:
        return f"{run.prefill_ms_per_token:.3f} ms/token, TTFT {run.ttft_s:.3f} s"
    return "ok"
