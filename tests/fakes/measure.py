"""Measure one server the way every front end does (`sweep/execute.py run_variant`: open, health,
the plan, the summary; errors recorded by the orchestration), for tests that want a variant's
result without a results folder."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from precmon.core import stops
from precmon.core.schema import Run, VariantResult
from precmon.core.settings import BenchSettings
from precmon.sweep.execute import Context, Job, run_variant


class _KeptOpen:
    """The server as the test holds it: the orchestration closes the server it measured, the test
    closes its own when it is done (one server may be measured several times)."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    def close(self) -> None:
        pass


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
        lambda: _KeptOpen(server),
        server.url,
        server.kind,
        model=model,
        label=label,
        precision=precision,
        launched=launched,
    )
    landed = (lambda label, run: on_run(run)) if on_run is not None else None
    return run_variant(job, Context(meter=meter, stop=stop or stops.Stop(), on_run=landed)).result
