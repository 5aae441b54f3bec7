"""What both importers share: checked field access on a peer's file and the document it becomes.

A peer's file becomes a typed results document (docs/design.md §5) whose runs are the peer's
per-repetition rates, so the ± and the CIs of the table are worked out the same way as precmon's
own. Every number read is checked (finite, not negative); a fault is one `DocumentError` line
naming the file and the field.
"""

from __future__ import annotations

import statistics
from typing import Any

from precmon.core import phases
from precmon.core.metric_keys import KEY
from precmon.core.schema import MAX_VALUE, Host, ResultsDoc, Run, VariantResult, to_json
from precmon.report.load import validate
from precmon.report.model import DocumentError
from precmon.untrusted import visible

#: slower than this is no rate (1000 / it would overflow the results' bounds): left out
MIN_RATE_TOK_S = 1e-6


class Reader:
    """Checked field access on a peer's file; faults name the file and the field path."""

    def __init__(self, name: str) -> None:
        self.name = name

    def fail(self, path: str, what: str, value: Any) -> DocumentError:
        shown = visible(repr(value), limit=40)
        return DocumentError(f"{self.name}: {path}: expected {what}, got {shown}")

    def check(self, v: Any, path: str) -> float:
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0 <= v <= MAX_VALUE:
            raise self.fail(path, f"a number from 0 to {MAX_VALUE:g}", v)
        return float(v)

    def number(self, obj: dict[str, Any], key: str, path: str) -> float:
        return self.check(obj.get(key), f"{path}.{key}")

    def count(self, obj: dict[str, Any], key: str, path: str) -> int:
        """A token or user count: an integer from 0 (0 when the key is absent)."""
        v = obj.get(key, 0)
        if isinstance(v, bool) or not isinstance(v, int) or not 0 <= v <= MAX_VALUE:
            raise self.fail(f"{path}.{key}", "a whole number from 0", v)
        return v

    def values(self, obj: dict[str, Any], key: str, path: str) -> list[float]:
        """`obj[key]` as a list of numbers >= 0 (a missing key is no values)."""
        v = obj.get(key)
        if v is None:
            return []
        if not isinstance(v, list):
            raise self.fail(f"{path}.{key}", "a list of numbers", v)
        return [self.check(x, f"{path}.{key}[{i}]") for i, x in enumerate(v)]

    def text(self, obj: dict[str, Any], key: str) -> str:
        v = obj.get(key)
        return visible(v, limit=120) if isinstance(v, str) else ""


def prefill_run(tokens: int, tok_s: float) -> Run:
    """A peer's prefill of `tokens` at `tok_s` as a valid run."""
    return Run(phases.PREFILL, prompt_tokens=tokens, target_prompt_tokens=tokens, prefill_ms_per_token=1000.0 / tok_s)


def _depth_medians(runs: list[Run]) -> dict[str, Any]:
    """`decode_tok_s_at_depth` and `prefill_ms_per_token_at_depth`: medians per depth (and size)."""
    decode: dict[int, list[float]] = {}
    grid: dict[int, dict[int, list[float]]] = {}
    for r in runs:
        if r.depth_tokens is None:
            continue
        if r.phase == phases.DEPTH_DECODE and r.decode_tok_s is not None:
            decode.setdefault(r.depth_tokens, []).append(r.decode_tok_s)
        elif (
            r.phase == phases.DEPTH_PREFILL
            and r.target_prompt_tokens is not None
            and r.prefill_ms_per_token is not None
        ):
            at = grid.setdefault(r.depth_tokens, {})
            at.setdefault(r.target_prompt_tokens, []).append(r.prefill_ms_per_token)
    out: dict[str, Any] = {}
    if decode:
        out[KEY.decode_tok_s_at_depth] = {str(d): statistics.median(decode[d]) for d in sorted(decode)}
    if grid:
        out[KEY.prefill_ms_per_token_at_depth] = {
            str(d): {str(n): statistics.median(grid[d][n]) for n in sorted(grid[d])} for d in sorted(grid)
        }
    return out


def _by_size(runs: list[Run], phase: str, field: str) -> dict[str, list[float]]:
    """The runs' `field` of `phase`, by their prompt size."""
    out: dict[str, list[float]] = {}
    for r in runs:
        if r.phase == phase and (value := getattr(r, field)) is not None:
            out.setdefault(str(r.target_prompt_tokens), []).append(value)
    return out


def medians(runs: list[Run]) -> dict[str, Any]:
    """The medians of the runs, as precmon's metrics are (docs/design.md §4)."""
    decode = [r.decode_tok_s for r in runs if r.phase == phases.DECODE and r.decode_tok_s is not None]
    metrics: dict[str, Any] = {KEY.decode_tok_s: statistics.median(decode)} if decode else {}
    sizes = _by_size(runs, phases.PREFILL, KEY.prefill_ms_per_token)
    metrics[KEY.prefill_ms_per_token] = {s: statistics.median(v) for s, v in sizes.items()}
    ttft = _by_size(runs, phases.TTFT, KEY.ttft_s)
    if ttft:
        metrics[KEY.ttft_s] = {s: statistics.median(v) for s, v in ttft.items()}
    return metrics | _depth_medians(runs)


def document(
    host: str, created: str, variants: list[VariantResult], sizes: list[int], name: str, **settings: Any
) -> ResultsDoc:
    """The peer's variants as a validated results document: the same checks as a precmon file
    (the document as it would be written, read back); `settings` beside the prompt sizes."""
    doc = ResultsDoc(
        created=created or None,
        host=Host(hostname=host or None),
        settings={"prefill_tokens": sorted(set(sizes)), **settings},
        variants=variants,
    )
    return validate(to_json(doc), name)
