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
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from precmon.measure.plan import Step, Stopped
from precmon.measure.results import VariantResult
from precmon.servers.base import Server, ServerError
from precmon.sweep.events import Log, SweepEvent, VariantStarted
from precmon.sweep.execute import INTERRUPTED
from precmon.sweep.spec import Variant


class Bench(Protocol):
    """What an interleaved sweep does with a bench that sweep/execute.py's `open_bench` built
    (measure/bench.py's `Bench`): it steps through the plan, never builds one itself."""

    result: VariantResult
    plan_completed: bool

    def start(self) -> None: ...

    def plan(self) -> list[Step]: ...

    def run_step(self, step: Step, *, switch: bool = False, extra: dict[str, Any] | None = None) -> None: ...

    def summarize(self) -> None: ...


Opened = tuple[Bench, Server]
OpenFn = Callable[[Variant], Opened]  # raises ServerError when the server is not there
FinishFn = Callable[[Variant, VariantResult], None]


@dataclass
class _Entry:
    variant: Variant
    bench: Bench
    server: Server
    plan: list[Step]


def _why(exc: Exception) -> str:
    return str(exc) if isinstance(exc, ServerError) else f"{type(exc).__name__}: {exc}"


def run_interleaved(
    todo: list[tuple[int, Variant]],
    total: int,
    open_bench: OpenFn,
    finish: FinishFn,
    emit: Callable[[SweepEvent], None],
    stop: threading.Event,
) -> bool:
    """Measure `todo` ((index in the file, variant)) interleaved; returns whether it was interrupted."""
    active: list[_Entry] = []
    cut_short = "stopped by user before the plan finished"

    def close(e: _Entry) -> None:
        try:
            e.server.close()
        finally:
            e.bench.summarize()
            finish(e.variant, e.bench.result)

    emit(Log(f"interleaved: {len(todo)} variants alternate request by request"))
    try:
        for i, v in todo:
            if stop.is_set():
                break
            emit(VariantStarted(v.label, i, total, v.strategy))
            bench: Bench | None = None
            try:
                bench, server = open_bench(v)
                entry = _Entry(v, bench, server, [])
                active.append(entry)
                bench.start()
                entry.plan = bench.plan()
            except Stopped:
                break
            except Exception as exc:  # noqa: BLE001 - one variant's failure never ends the sweep
                result = bench.result if bench else VariantResult(v.label, v.precision, v.model, {"kind": v.server})
                result.errors.append(_why(exc))
                result.status = "failed"  # the summary (when there is a bench) says partial if it measured
                emit(Log(f"{v.label}: failed: {_why(exc)}"))
                if active and active[-1].bench is bench:
                    close(active.pop())
                else:
                    finish(v, result)
        order_index, k = 0, 0
        while active and not stop.is_set():
            for e in list(active):
                if k >= len(e.plan):
                    e.bench.plan_completed = True
                    active.remove(e)
                    close(e)
                    continue
                try:
                    e.bench.run_step(e.plan[k], switch=True, extra={"order_index": order_index})
                except Stopped:
                    break
                except Exception as exc:  # noqa: BLE001 - this variant leaves the rotation, the rest go on
                    e.bench.result.errors.append(_why(exc))
                    emit(Log(f"{e.variant.label}: failed: {_why(exc)}"))
                    active.remove(e)
                    close(e)
                order_index += 1
            k += 1
    except KeyboardInterrupt:
        stop.set()
        cut_short = INTERRUPTED
    finally:
        for e in active:
            e.bench.result.errors.append(cut_short)
            close(e)
    return stop.is_set()
