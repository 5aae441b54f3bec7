"""Interleaved sweeps (`order = "interleaved"`, docs/design.md §6): variants alternate request by
request, so slow drift (heat, a power cap settling, other load coming and going) lands on every
variant alike instead of on whichever ran last.

Every variant is prepared first (model info, sizes, tokenizer, idle power), in file order. Then
step k of every variant's plan runs before step k+1 of any: warm-up of A, B, C; decode #1 of A,
B, C; decode #2 ...; then the prefill sizes likewise. Before each step the variant's model is
made the loaded one (`ensure_loaded`), so a router's model switch is never inside a measured
request. Runs land in the journal as they are measured (the runner's `on_run`); each carries
`extra.order_index`, its place in this session's order. A variant whose server fails leaves the
rotation and is saved at once; the others go on. Stopped or Ctrl-C: every unfinished variant is
saved as partial, and `--resume` measures every variant that is not `ok` again, whole plan,
interleaved among themselves (the runs cut short stay in the journal).

Only the order is this module's: each variant is opened, run step by step and finished by
`execute.VariantRun`, the parts `run_variant` is made of, so an interleaved variant records
everything a sequential one does, and a cut or a failure the same way.
"""

from __future__ import annotations

from collections.abc import Callable

from precmon.core import stops
from precmon.core.stops import Cut
from precmon.sweep.events import Log, VariantStarted
from precmon.sweep.execute import Context, Job, Outcome, VariantRun
from precmon.sweep.spec import Variant

JobFn = Callable[[Variant], Job]
FinishFn = Callable[[Variant, Outcome], None]


def run_interleaved(
    todo: list[tuple[int, Variant]],
    total: int,
    job_for: JobFn,
    ctx: Context,
    finish: FinishFn,
) -> bool:
    """Measure `todo` ((index in the file, variant)) interleaved; returns whether it was cut short."""
    active: list[tuple[Variant, VariantRun]] = []

    def done(v: Variant, run: VariantRun) -> None:
        finish(v, run.finish())

    ctx.emit(Log(f"interleaved: {len(todo)} variants alternate request by request"))
    try:
        for i, v in todo:
            if ctx.stop.is_set():
                break
            ctx.emit(VariantStarted(v.label, i, total, v.strategy, v.precision, v.model))
            run = VariantRun(job_for(v), ctx)
            if run.open() and run.prepare():
                active.append((v, run))
            else:  # not there, or failed (or stopped) before its first step: saved at once
                done(v, run)
        order_index, k = 0, 0
        while active and not ctx.stop.is_set():
            for entry in list(active):
                v, run = entry
                if k < len(run.steps):
                    ran = run.step(run.steps[k], order_index)
                    if ctx.stop.is_set():  # the rest are saved below, cut short
                        break
                    order_index += 1
                    if ran:
                        continue
                else:
                    run.steps_done()
                active.remove(entry)  # its plan is done, or it failed: it leaves the rotation
                done(v, run)
            k += 1
    except KeyboardInterrupt:  # between the variants' own parts (which record one themselves)
        stops.request(ctx.stop, Cut.INTERRUPTED)
    finally:
        for v, run in active:
            done(v, run)
    return ctx.stop.is_set()
