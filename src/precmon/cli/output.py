"""One-line messages on stderr, made safe: what every command prints when something goes wrong.

Kept apart from common.py (which loads the measuring layers) so `precmon --help` and the
top-level error handler stay light.
"""

from __future__ import annotations

import os
import sys

from precmon.untrusted import redact, visible


def say(msg: str) -> None:
    """One line on stderr. `msg` may hold server or file text: escapes are removed, controls shown,
    credentials redacted (the plain-stderr counterpart of `precmon.untrusted.markup`)."""
    print(visible(redact(msg)), file=sys.stderr, flush=True)


def describe_error(exc: BaseException) -> str:
    """`TypeError: msg (at file.py:123)`: enough to locate a bug, without a traceback."""
    tb = exc.__traceback__
    while tb is not None and tb.tb_next is not None:
        tb = tb.tb_next
    at = f" (at {os.path.basename(tb.tb_frame.f_code.co_filename)}:{tb.tb_lineno})" if tb else ""
    return f"{type(exc).__name__}: {visible(redact(str(exc)), limit=300)}{at}"


def fail(msg: str, code: int) -> int:
    """Print `precmon: msg` (made safe as `say` does) and return `code`, for `return fail(...)`."""
    say(f"precmon: {msg}")
    return code
