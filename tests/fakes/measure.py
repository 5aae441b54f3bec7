"""Measure one server the way every front end does (`sweep/execute.py run_variant`: open, health,
the plan, the summary; errors recorded by the orchestration), for tests that want a variant's
result without a results folder."""

from __future__ import annotations

import copy
import threading
from collections.abc import Callable
from typing import Any

from precmon.core import stops
from precmon.core.schema import Run, VariantResult
from precmon.core.settings import BenchSettings
from precmon.sweep.execute import Context, Job, run_variant


def _kept_open(server: Any) -> Any:
    """The server as the test holds it: the orchestration closes the server it measured, the test
    closes its own when it is done (one server may be measured several times). A shallow copy of
    the same class, not a proxy: from Python 3.12 a runtime-checkable Protocol (`ReportsFlags`,
    `ErasesSlots`) looks its members up statically, so a proxy's `__getattr__` hides them."""
    kept = copy.copy(server)
    kept.close = lambda: None
    return kept


def measure(
    server: Any,
    settings: BenchSettings,
    *,
    model: str | None = None,
    label: str | None = None,
    precision: str | None = None,
    meter: Any = None,
    stop: threading.Event | None = None,
    launched: bool = False,
    on_run: Callable[[Run], None] | None = None,
) -> VariantResult:
    """The summarised variant of one run of `settings`' plan against `server` (already open)."""
    job = Job(
        settings,
        lambda: _kept_open(server),
        server.url,
        server.kind,
        model=model,
        label=label,
        precision=precision,
        launched=launched,
    )
    landed = (lambda label, run: on_run(run)) if on_run is not None else None
    return run_variant(job, Context(meter=meter, stop=stop or stops.Stop(), on_run=landed)).result
