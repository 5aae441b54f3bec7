"""Ctrl-C, SIGTERM and SIGHUP end a command without losing what it measured.

The first signal raises KeyboardInterrupt where the work is (a bench or sweep catches it, keeps
its runs and saves them). Saving then must not be cut short by a second signal a few ms later
(a double Ctrl-C, a terminal sending SIGHUP then SIGTERM): signals within `SAVE_GRACE_S` of the
first, and any signal while `holding()` is active, are only recorded. After the grace a signal
raises again, so a save that hangs can still be interrupted.
"""

from __future__ import annotations

import os
import signal
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

SAVE_GRACE_S = 5.0
SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


class _State:
    first_at_s: float | None = None  # monotonic time of the signal that raised
    holding = 0  # depth of active `holding()` blocks
    held = 0  # signals recorded instead of raised


_state = _State()


def _on_signal(signum: int, frame: object) -> None:
    now_s = time.monotonic()
    first = _state.first_at_s
    if _state.holding or (first is not None and now_s - first < SAVE_GRACE_S):
        _state.held += 1
        try:  # os.write, not print: a handler may run in the middle of a print to stderr
            os.write(2, b"\nprecmon: saving what was measured first, then stopping\n")
        except OSError:
            pass
        return
    _state.first_at_s = now_s
    raise KeyboardInterrupt(signal.Signals(signum).name)


@contextmanager
def installed() -> Iterator[None]:
    """Route SIGINT/SIGTERM/SIGHUP through `_on_signal` for the block (only where nobody else
    handles them), and put the previous handlers back after it.

    SIGINT is taken over from Python's default handler (which raises KeyboardInterrupt too, but at
    every press); SIGTERM/SIGHUP only while they are at the OS default. Outside the main thread
    (precmon driven from a test's thread) nothing is installed.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    _state.first_at_s, _state.held = None, 0
    previous = {}
    for sig in SIGNALS:
        current = signal.getsignal(sig)
        if current is signal.SIG_DFL or (sig == signal.SIGINT and current is signal.default_int_handler):
            previous[sig] = current
            signal.signal(sig, _on_signal)
    try:
        yield
    finally:
        for sig, handler in previous.items():
            if signal.getsignal(sig) is _on_signal:  # the TUI may have put its own in meanwhile
                signal.signal(sig, handler)


@contextmanager
def holding() -> Iterator[_State]:
    """Within the block, signals are recorded, not raised: `with holding() as h: save()`; then
    `h.held` tells whether one came (the command should exit 130 after saving)."""
    _state.holding += 1
    try:
        yield _state
    finally:
        _state.holding -= 1
