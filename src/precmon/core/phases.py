"""The phase table: every kind of run a bench records, with what each one means for the numbers.

A run's `phase` is one of these names on disk (never renamed). Code asks this table what a phase
does instead of listing phase names in its own tuples.
"""

from __future__ import annotations

from dataclasses import dataclass

WARMUP = "warmup"
DECODE = "decode"
PREFILL = "prefill"
TTFT = "ttft"
LONG_CONTEXT_DECODE = "long_context_decode"
CONCURRENCY = "concurrency"
DEPTH_FILL = "depth_fill"
DEPTH_PREFILL = "depth_prefill"
DEPTH_DECODE = "depth_decode"
IDLE = "idle"  # a power window only: the server ready, nothing measured (never a run)


@dataclass(frozen=True)
class Phase:
    """What one phase is.

    Attributes:
        name: the `phase` string of a run on disk.
        measured: its runs feed medians and validity (a warm-up does not).
        decode_window: its power window is cut at the first token (decode power, not prefill).
        target_field: the run field whose 95% CI decides when the phase has repeated enough
            (`target_ci_pct`), or None where repeats are not adaptive.
        what: one line for people.
    """

    name: str
    measured: bool
    decode_window: bool
    target_field: str | None
    what: str


PHASES: tuple[Phase, ...] = (
    Phase(WARMUP, False, False, None, "one unmeasured request first (loads caches and kernels)"),
    Phase(DECODE, True, True, "decode_tok_s", "a short prompt and a long answer: decode tok/s"),
    Phase(PREFILL, True, False, "prefill_ms_per_token", "a prompt of N tokens, one token out: ms per prompt token"),
    Phase(TTFT, True, False, "ttft_s", "a prompt of N tokens: time to the first token"),
    Phase(LONG_CONTEXT_DECODE, True, True, "decode_tok_s", "decode after a long prompt"),
    Phase(CONCURRENCY, True, False, None, "N streams at once: aggregate tok/s"),
    Phase(DEPTH_FILL, True, False, None, "fills the context to a depth (cached for the next two)"),
    Phase(DEPTH_PREFILL, True, False, None, "prefill on top of a filled context"),
    Phase(DEPTH_DECODE, True, True, None, "decode on top of a filled context"),
)
BY_NAME: dict[str, Phase] = {p.name: p for p in PHASES}
NAMES: tuple[str, ...] = tuple(BY_NAME)
DECODE_WINDOW: frozenset[str] = frozenset(p.name for p in PHASES if p.decode_window)
TARGET_FIELD: dict[str, str] = {p.name: p.target_field for p in PHASES if p.target_field}


def measured(name: str) -> bool:
    """True for a phase whose runs count (an unknown name from a newer file counts too)."""
    p = BY_NAME.get(name)
    return p.measured if p else True
