"""The report's "Answers" and "What ran" sections: each variant's answer to the fixed question
beside the baseline's, and what its weights and kernels really were (docs/design.md §5).

Both are read from the variant's `answer`, `weights` and `compute_path` objects; a file without
them (older, or a server precmon could not read) gives no row, never a guessed one. Strings are
as the file has them: each renderer escapes them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from precmon.core.answer import Answer, diverges_at, read_answer
from precmon.core.schema import ResultsDoc
from precmon.core.warning_codes import FALLBACK_CODE


@dataclass(frozen=True)
class AnswerRow:
    """One variant's answer. `parts` says where it leaves the baseline's ("same as the baseline",
    "parts at word 4"), empty for the baseline itself."""

    label: str
    text: str  # the answer, or "n/a: <why>"
    parts: str
    is_baseline: bool


@dataclass(frozen=True)
class Answers:
    prompt: str
    rows: tuple[AnswerRow, ...]
    note: str  # how the answers were made (one line), or why they cannot be compared


@dataclass(frozen=True)
class RanRow:
    """What one variant's weights were and what ran them (each "n/a: why" where unknown)."""

    label: str
    weights: str  # "66% NVFP4, 34% Q8_0 (file type NVFP4)"
    bits_per_weight: str
    compute: str  # "CPU · NVFP4 unpacked to int8 dot products (…)"
    fallback: bool


def _parts(base: Answer | None, answer: Answer) -> str:
    if base is None or base.text is None or answer.text is None:
        return "cannot compare (no baseline answer)" if answer.text is not None else ""
    at = diverges_at(base.text, answer.text)
    return "same words as the baseline" if at is None else f"parts from the baseline at word {at + 1}"


def answers(doc: ResultsDoc, baseline: str | None) -> Answers | None:
    """The answers of `doc`'s variants against `baseline`'s (a label), None when none has one."""
    read = [(v.label, read_answer(v.answer)) for v in doc.variants]
    got = [(label, a) for label, a in read if a is not None]
    if not got:
        return None
    prompts = {a.prompt for _, a in got}
    base = next((a for label, a in got if label == baseline), None)
    rows = []
    for label, a in got:
        text = a.text if a.text is not None else f"n/a: {a.error or 'no answer'}"
        is_base = label == baseline
        rows.append(AnswerRow(label, text, "" if is_base else _parts(base, a), is_base))
    if len(prompts) > 1:
        note = "the variants were asked different questions: their answers are not comparable"
    else:
        note = "greedy (temperature 0), one request per variant after its quality pass; not a timing request"
    return Answers(sorted(prompts)[0], tuple(rows), note)


def _weights_words(w: dict[str, Any]) -> str:
    shares = w.get("shares")
    if not isinstance(shares, dict):  # a checkpoint's config.json: its type and how it says so
        main, told = w.get("main_type"), w.get("told_by")
        return f"{main or 'n/a'} ({told})" if isinstance(told, str) else "n/a"
    parts = [f"{s:.0%} {str(t).upper()}" for t, s in shares.items() if isinstance(s, (int, float)) and s >= 0.01]
    parts = [p for p in parts if not p.endswith((" F32", " F64"))]
    words = ", ".join(parts[:4]) or "n/a"
    if isinstance(w.get("file_type"), str):
        words += f" (file type {w['file_type']})"
    if isinstance(w.get("name"), str) and w["name"]:
        words += f"; the file's name for itself: {w['name'][:200]}"
    return words


def what_ran(doc: ResultsDoc) -> tuple[RanRow, ...]:
    """One row per variant with weights or a compute path recorded; () when none has either."""
    rows = []
    for v in doc.variants:
        w, c = v.weights, v.compute_path
        if w is None and c is None:
            continue
        weights = _weights_words(w) if w is not None else "n/a: the model file was not readable here"
        bpw = w.get("bits_per_weight") if w is not None else None
        bits = f"{bpw:.2f}" if isinstance(bpw, (int, float)) and not isinstance(bpw, bool) else "n/a"
        if c is not None and isinstance(c.get("words"), str):
            compute = f"{c['words']} · {c.get('kernel') or 'kernel n/a'}"
        elif c is not None and isinstance(c.get("reason"), str):
            compute = f"n/a: {c['reason']}"
        else:
            compute = "n/a"
        warned = any(x.startswith(FALLBACK_CODE) for x in v.warnings or [])
        rows.append(RanRow(v.label, weights, bits, compute, warned))
    return tuple(rows)
