"""The report's "Memory fit" section: how many users, and how long a context, fit in the box's
memory at each variant's precision (docs/design.md §4 "Memory fit"; the variant's `fit` record).

One row per variant with a `fit`: its inputs (usable memory, weights, KV bytes per 1K tokens) and
its figures, n/a where an input is missing; under the table one line per variant says where the
usable figure came from, and what the server's own allocation or the missing input says. The
record is file content: only numbers and strings are used, strings through `visible` and cut
short; each renderer escapes the cells for its medium.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from precmon.core.schema import Fit, ResultsDoc
from precmon.report.fmt import NA, human_tokens, is_number
from precmon.untrusted import visible

USERS_AT = ("8192", "32768")
FOR_USERS = ("1", "4", "16")
COLUMNS = (
    "Variant",
    "Usable (GB)",
    "Weights (GB)",
    "KV MiB / 1K tokens",
    *(f"Users @ {human_tokens(c)}" for c in USERS_AT),
    *(f"Context × {u} user{'' if u == '1' else 's'}" for u in FOR_USERS),
)
FIT_NOTE = (
    "weights + users × context × KV bytes ≤ usable memory; the runtime's own buffers (compute scratch, "
    "a CUDA context) are not counted, so these are upper bounds, and the model's own context limit is not applied."
)
TEXT_CHARS = 200


@dataclass(frozen=True)
class FitRow:
    """One variant's fit: text cells in `COLUMNS` order, and its one line of where and why."""

    label: str
    cells: tuple[str, ...]
    line: str


def _n(value: Any) -> str:
    return f"{int(value):,}" if is_number(value) and value >= 0 else NA


def _gb(value: Any) -> str:
    return f"{value / 1e9:.2f}" if is_number(value) and value >= 0 else NA


def _line(label: str, fit: Fit) -> str:
    bits = [visible(x)[:TEXT_CHARS] for x in (fit.basis, fit.reason, fit.check) if isinstance(x, str) and x]
    return f"{label}: " + ("; ".join(bits) or "no basis recorded") + "."


def fit_row(label: str, fit: Fit) -> FitRow:
    name = visible(label)
    kv = fit.kv_bytes_per_token
    users = fit.users_at if isinstance(fit.users_at, dict) else {}
    context = fit.context_for_users if isinstance(fit.context_for_users, dict) else {}
    cells = (
        name,
        _gb(fit.usable_bytes),
        _gb(fit.weights_bytes),
        f"{kv * 1024 / 2**20:.2f}" if is_number(kv) and kv > 0 else NA,
        *(_n(users.get(c)) for c in USERS_AT),
        *(_n(context.get(u)) for u in FOR_USERS),
    )
    return FitRow(name, cells, _line(name, fit))


def fit_rows(doc: ResultsDoc) -> tuple[FitRow, ...]:
    """One row per variant that has a `fit` record, in variant order."""
    return tuple(fit_row(v.label, v.fit) for v in doc.variants if v.fit is not None)
