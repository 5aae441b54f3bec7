"""One-line messages on stderr, made safe: what every command prints when something goes wrong;
and a terminal in any locale.

Kept apart from common.py (which loads the measuring layers) so `precmon --help` and the
top-level error handler stay light.

Any locale: on a terminal whose encoding lacks a symbol precmon prints (`≈`, `±`, `…`, `→` under
ISO-8859-1 or ASCII), the symbol is written as an ASCII stand-in (`~`, `+/-`, `...`, `->`), never
an UnicodeEncodeError; Rich draws its boxes in ASCII there by itself. Data written to stdout (an
export, `--json -`) is UTF-8 bytes in every locale (`measure/results.py write_stream`).
"""

from __future__ import annotations

import codecs
import io
import os
import sys

from precmon.untrusted import redact, visible

#: What a symbol becomes where the terminal's encoding lacks it; anything else becomes "?".
STAND_INS = {
    "…": "...", "—": "-", "–": "-", "−": "-", "‐": "-", "→": "->", "←": "<-", "↑": "^", "↓": "v",
    "±": "+/-", "×": "x", "÷": "/", "·": ".", "≤": "<=", "≥": ">=", "≈": "~", "≠": "!=", "⚠": "!",
    "‖": "||", "√": "sqrt", "Δ": "d", "Σ": "sum", "µ": "u", "²": "^2", "⁶": "^6", "°": "deg", "∞": "inf",
    "“": '"', "”": '"', "‘": "'", "’": "'", "✗": "x", "✓": "v", "⏎": "\\n", "●": "*", "◆": "*", "■": "#",
    "█": "#", "▇": "#", "▆": "=", "▅": "=", "▄": "-", "▃": "-", "▂": "_", "▁": "_", "§": "S", "\u00a0": " ",
}  # fmt: skip
STAND_IN_ERRORS = "precmon-stand-in"


def _stand_in_handler(exc: UnicodeError) -> tuple[str, int]:
    if not isinstance(exc, UnicodeEncodeError):
        raise exc
    return "".join(STAND_INS.get(ch, "?") for ch in exc.object[exc.start : exc.end]), exc.end


codecs.register_error(STAND_IN_ERRORS, _stand_in_handler)


def stand_in(text: str, encoding: str) -> str:
    """`text` as a terminal of `encoding` shows it: what the encoding lacks, as its stand-in."""
    return text.encode(encoding, STAND_IN_ERRORS).decode(encoding)


def fit_streams_to_locale() -> None:
    """stdout and stderr write stand-ins for what their encoding lacks (a no-op under UTF-8)."""
    for stream in (sys.stdout, sys.stderr):
        if isinstance(stream, io.TextIOWrapper) and codecs.lookup(stream.encoding).name != "utf-8":
            stream.reconfigure(errors=STAND_IN_ERRORS)


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
