"""The `--refresh-s` setting: its default, its bounds and its check, owned once.

The CLI's flag (`cli/parser.py`, `cli/argtypes.py`) and the TUI's pace (`tui/pace.py`) both read
it here, so the CLI never imports the TUI to write its `--help`. Imports nothing of precmon.
"""

from __future__ import annotations

#: How often the TUI repaints by default (nvitop's default is 2 s).
DEFAULT_REFRESH_S = 1.0
MIN_REFRESH_S, MAX_REFRESH_S = 0.1, 60.0


def refresh_problem(value: float) -> str | None:
    """Why `value` is no refresh interval (None: it is one)."""
    if not MIN_REFRESH_S <= value <= MAX_REFRESH_S:  # also false for NaN
        return f"between {MIN_REFRESH_S:g} and {MAX_REFRESH_S:g} seconds"
    return None
