"""Quitting without losing a measurement: ask while one runs, let it save, then exit.

`q` (or Ctrl-C) during a bench or sweep asks first; yes stops the measurement (its request in
flight is abandoned), gives it `QUIT_WAIT_S` (a sweep, which also stops the servers it launched,
`SWEEP_QUIT_WAIT_S`) to save what it measured, then exits; a second quit meanwhile exits at once.
"""

from __future__ import annotations

import asyncio
import time
from typing import TYPE_CHECKING

from precmon.exit_codes import ExitCode
from precmon.tui.screens.confirm_quit import ConfirmQuit
from precmon.tui.widgets.progress_log import ProgressLog

if TYPE_CHECKING:
    from precmon.tui.app import PrecmonApp

QUIT_WAIT_S = 3.0  # on quit, how long a bench gets to save what it measured (its request is abandoned)
# A sweep also stops any server it launched (SIGTERM, then a grace period) before writing results.json:
# it gets longer; a second quit exits at once.
SWEEP_QUIT_WAIT_S = 15.0


class QuitFlow:
    def __init__(self, app: PrecmonApp) -> None:
        self.app = app

    def ask(self) -> None:
        app = self.app
        if app.measuring is None or isinstance(app.screen, ConfirmQuit) or app.quitting.is_set:
            self.quit()
            return

        def answered(quit_: bool | None) -> None:
            if quit_:
                self.quit()

        app.push_screen(ConfirmQuit(str(app.results_dir())), answered)

    def quit(self) -> None:
        app = self.app
        again = app.quitting.is_set
        app.shutdown()
        if again or not app.measure_worker.busy:
            app.exit(0)
            return
        wait_s = SWEEP_QUIT_WAIT_S if app.measuring == "sweep" else QUIT_WAIT_S
        app.base(ProgressLog).log_line(f"quitting: saving what was measured (up to {wait_s:.0f} s; q again: now)…")
        app.run_worker(self._exit_when_saved(wait_s), group="quit", exclusive=True)

    async def _exit_when_saved(self, wait_s: float) -> None:
        deadline = time.monotonic() + wait_s
        while self.app.measure_worker.busy and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
        self.app.exit(0)

    def exit_lines(self) -> list[str]:
        """What to print once the screen is gone: where this session's results are."""
        worker = self.app.measure_worker
        lines = [f"precmon: results saved: {p}" for p in dict.fromkeys(worker.saved)]
        if worker.busy and worker.journal is not None:
            lines.append(f"precmon: the sweep stopped mid-request; every run measured is in {worker.journal}")
        return lines + [f"precmon: {line}" for line in worker.misplaced]

    def exit_code(self, code: int) -> int:
        """The app's exit `code`, or 1 where a clean exit would hide that a sweep's results folder
        failed and its results are in the rescue folder instead (interrupted and crashed stay)."""
        if code == ExitCode.OK and self.app.measure_worker.misplaced:
            return ExitCode.FAILED
        return code
