"""The report's KV cache lines: what each variant's cache holds, or why that is n/a.

The `kv_*` rows of the table give the numbers (docs/design.md §4); what a row cannot say is the
context the "sequences that fit" are counted at, where the figures came from, and why a variant
has none. One line per variant that has a `kv_memory` record (§5) says that. The record is file
content: only numbers and strings are used, strings through `visible` and cut short; renderers
escape the line for their medium.
"""

from __future__ import annotations

from typing import Any

from precmon.core.schema import ResultsDoc
from precmon.report.fmt import is_number
from precmon.untrusted import visible

TEXT_CHARS = 160
MIB = 2**20


def _num(record: dict[str, Any], key: str) -> float | None:
    value = record.get(key)
    return float(value) if is_number(value) and value >= 0 else None


def _tokens(n: float) -> str:
    return f"{int(n):,}"


def kv_line(label: str, record: dict[str, Any]) -> str:
    """ "KV cache F16: 16.00 MiB / 1K tokens, 1,024 tokens, longest context 512, 2 sequences of
    512 tokens fit (the server's log (llama_kv_cache))." or "KV cache F16: n/a (why)." """
    name = visible(label)[:TEXT_CHARS]
    reason = record.get("reason")
    if isinstance(reason, str):
        return f"KV cache {name}: n/a ({visible(reason)[:TEXT_CHARS]})."
    bits = []
    if (b := _num(record, "bytes_per_token")) is not None:
        bits.append(f"{b * 1024 / MIB:.2f} MiB / 1K tokens")
    else:
        bits.append("memory per token n/a (the server gives no size)")
    if (cap := _num(record, "capacity_tokens")) is not None:
        bits.append(f"{_tokens(cap)} tokens in all")
    if (longest := _num(record, "longest_context_tokens")) is not None:
        bits.append(f"longest context {_tokens(longest)}")
    conc, ctx = _num(record, "max_concurrency_at_ctx"), _num(record, "context_tokens")
    if conc is not None and ctx is not None:
        bits.append(f"{conc:g} sequences of {_tokens(ctx)} tokens fit")
    source = record.get("from")
    where = f" ({visible(source)[:TEXT_CHARS]})" if isinstance(source, str) else ""
    return f"KV cache {name}: " + ", ".join(bits) + f"{where}."


def kv_lines(doc: ResultsDoc) -> list[str]:
    """One line per variant with a `kv_memory` record, in variant order."""
    out = []
    for v in doc.variants:
        if v.kv_memory is not None:
            out.append(kv_line(v.label, v.kv_memory))
    return out
