"""The exit codes of every precmon command (docs/design.md §3), defined once.

A top-level module that imports nothing from precmon, so the CLI, the TUI and the report entry
points (whatever layer they sit in) all return the same numbers.
"""

from __future__ import annotations

from enum import IntEnum


class ExitCode(IntEnum):
    """What a script can tell from precmon's exit status."""

    OK = 0  # everything planned was measured cleanly (or the command succeeded)
    FAILED = 1  # a measurement failed: server error, invalid run, a variant not ok (results saved)
    USAGE = 2  # usage or input error: one line naming the flag, file, line or field
    INTERRUPTED = 130  # Ctrl-C, SIGTERM or SIGHUP: what was measured is saved
