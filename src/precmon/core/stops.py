"""Why a measurement ended before its plan did, and the words a variant keeps for it.

Two cuts, typed (`Cut`), never told apart by matching text: the user's stop (the TUI's `s` again
or `q`, a `stop` event set by whoever drives a sweep) and an interrupt (Ctrl-C, SIGTERM, SIGHUP:
`cli/signals.py` turns each into a KeyboardInterrupt where the work is; the TUI's own SIGTERM and
SIGHUP handler asks its `Stop` for one). Every front end (bench, both sweep orders, demo, the TUI)
records a cut with `record`, so a variant says it in the same words whoever measured it, and an
interrupt exits 130 (docs/design.md §3).
"""

from __future__ import annotations

import enum
import threading


class Cut(enum.Enum):
    STOPPED = "stopped"  # asked to stop: the variant ends after the request in flight
    INTERRUPTED = "interrupted"  # Ctrl-C, SIGTERM or SIGHUP: the command exits 130


#: What a variant's `errors` keep when its plan was cut short.
PLAN_WORDS = {
    Cut.STOPPED: "stopped by user before the plan finished",
    Cut.INTERRUPTED: "interrupted (Ctrl-C): runs so far are kept",
}
#: ... and when quality scoring, after the plan, was: the speed results stand.
QUALITY_WORDS = {
    Cut.STOPPED: "stopped by user before quality scoring finished",
    Cut.INTERRUPTED: "interrupted (Ctrl-C) during quality scoring: the speed results are kept",
}
#: A launched server still starting when the stop came (the variant measured nothing).
LAUNCH_STOPPED = "stopped by user while the server was starting"
INTERRUPTED = PLAN_WORDS[Cut.INTERRUPTED]
QUALITY_INTERRUPTED = QUALITY_WORDS[Cut.INTERRUPTED]
_ALL = frozenset([*PLAN_WORDS.values(), *QUALITY_WORDS.values(), LAUNCH_STOPPED])


class Stop(threading.Event):
    """A stop event that knows why it was set: `request(Cut.INTERRUPTED)` for a signal, a plain
    `set()` (or `request(Cut.STOPPED)`) for the user's stop. An interrupt outranks a stop, since
    it decides the exit code. Anything that waits on a `threading.Event` takes one."""

    def __init__(self) -> None:
        super().__init__()
        self.cut: Cut | None = None

    def request(self, cut: Cut) -> None:
        if cut is Cut.INTERRUPTED or self.cut is None:
            self.cut = cut
        self.set()


def request(stop: threading.Event, cut: Cut) -> None:
    """Set `stop` for `cut` (a plain `threading.Event` can only say "stopped")."""
    if isinstance(stop, Stop):
        stop.request(cut)
    else:
        stop.set()


def cut_of(stop: threading.Event) -> Cut | None:
    """Why `stop` is set, or None while it is not."""
    if not stop.is_set():
        return None
    return (stop.cut if isinstance(stop, Stop) else None) or Cut.STOPPED


def record(errors: list[str], cut: Cut, words: dict[Cut, str] = PLAN_WORDS) -> None:
    """Add the words for `cut` to a variant's `errors`, once: a variant is cut short once, and the
    first words said stay (an exact entry, not a match on part of one)."""
    if not any(e in _ALL for e in errors):
        errors.append(words[cut])
