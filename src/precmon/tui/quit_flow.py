"""Quitting without losing a measurement: how long to wait for it to save, and what to say after.

`q` (or Ctrl-C) during a bench or sweep asks first (`screens/confirm_quit.py`); yes stops the
measurement (its request in flight is abandoned), gives it `QUIT_WAIT_S` (a sweep, which also
stops the servers it launched, `SWEEP_QUIT_WAIT_S`) to save what it measured, then exits; a second
quit meanwhile exits at once (the app's `action_quit`). Once the screen is gone, `exit_lines` says
where this session's results are. Reads only the measure worker's record of the session.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

from precmon.exit_codes import ExitCode
from precmon.tui.workers.measure_worker import MeasureWorker

QUIT_WAIT_S = 3.0  # on quit, how long a bench gets to save what it measured (its request is abandoned)
# A sweep also stops any server it launched (SIGTERM, then a grace period) before writing results.json:
# it gets longer; a second quit exits at once.
SWEEP_QUIT_WAIT_S = 15.0


def save_wait_s(measuring: str | None) -> float:
    """How long a measurement stopped by a quit gets to save (`measuring`: "bench" | "sweep")."""
    return SWEEP_QUIT_WAIT_S if measuring == "sweep" else QUIT_WAIT_S


async def until_saved(worker: MeasureWorker, wait_s: float, then: Callable[[], object]) -> None:
    """Call `then` (the app's exit) once the measurement has ended and saved, or after `wait_s`."""
    deadline = time.monotonic() + wait_s
    while worker.busy and time.monotonic() < deadline:
        await asyncio.sleep(0.05)
    then()


def exit_lines(worker: MeasureWorker) -> list[str]:
    """What to print once the screen is gone: where this session's results are."""
    lines = [f"precmon: results saved: {p}" for p in dict.fromkeys(worker.saved)]
    if worker.refused:  # quit at the preflight's dialog: what it found, for the terminal's scrollback
        lines += ["precmon: not measured: the preflight found"] + [f"  {line}" for line in worker.refused]
    if worker.busy and worker.journal is not None:
        lines.append(f"precmon: the sweep stopped mid-request; every run measured is in {worker.journal}")
    return lines + [f"precmon: {line}" for line in worker.misplaced]


def exit_code(code: int, worker: MeasureWorker) -> int:
    """The app's exit `code`, or 1 where a clean exit would hide that a sweep's results folder
    failed and its results are in the rescue folder instead (interrupted and crashed stay)."""
    if code == ExitCode.OK and worker.misplaced:
        return ExitCode.FAILED
    return code
