"""A run and a variant in memory: small dataclasses whose dicts are the field table's records.

`to_dict` writes the keys in the order of `schema.RUN` / `schema.VARIANT` (byte for byte what
precmon always wrote); `from_dict` checks a record read back by the same rules as the report's
loader (core/schema/check.py) and raises `RecordError`, one line naming the field. Keys a newer
file adds are kept: a variant's in `extra`, a run's inside its `extra` object.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from precmon.core.registry import empty_metrics
from precmon.core.schema import RUN, VARIANT, names
from precmon.core.schema.check import Checker, RecordError, check_run, check_variant

#: A run's keys as written (`ok` is always there; the others only when they hold something).
RUN_KEYS = names(RUN)
#: A variant's own keys; every other key of a variant dict is in `VariantResult.extra`.
VARIANT_KEYS = names(VARIANT, extra=False)


def check_run_dict(d: Any, where: str) -> None:
    """Raise RecordError unless `d` is a run record (`Run.from_dict` reads it)."""
    check_run(Checker("", RecordError), d, where)


def check_variant_dict(d: Any, where: str) -> None:
    """Raise RecordError unless `d` is a variant record, runs included (`VariantResult.from_dict`)."""
    check_variant(Checker("", RecordError), d, where)


@dataclass
class Run:
    """One measured request (or one concurrency level) of a variant: the fields of `schema.RUN`."""

    phase: str  # precmon.core.phases
    # Every field but `phase` has a default: `to_dict` leaves out what is None, so `from_dict`
    # must accept its absence (a failed request has no token counts).
    prompt_tokens: int | None = None
    output_tokens: int | None = None
    ttft_s: float | None = None
    decode_tok_s: float | None = None
    prefill_ms_per_token: float | None = None
    itl_ms_p50: float | None = None
    itl_ms_p99: float | None = None
    power_w: float | None = None
    energy_j: float | None = None
    cached_tokens: int | None = None
    server_timings: dict[str, Any] = field(default_factory=dict)
    ok: bool = True
    reason: str | None = None  # why the run is invalid (excluded from medians)
    target_prompt_tokens: int | None = None
    repeat: int | None = None
    extra: dict[str, Any] = field(default_factory=dict)  # keys: schema.RUN_EXTRA (and a newer file's)
    # Context depth (measure/depth/steps.py): the tokens already in context, served from the cache.
    depth_tokens: int | None = None

    def to_dict(self) -> dict[str, Any]:
        """The record on disk: the table's order, None and empty objects left out, `ok` always."""
        d = asdict(self)
        return {k: d[k] for k in RUN_KEYS if k == "ok" or (d[k] is not None and d[k] != {})}

    @classmethod
    def from_dict(cls, d: Any, where: str = "run") -> Run:
        """The Run a `to_dict` wrote; RecordError (one line naming the field) for anything else."""
        check_run_dict(d, where)
        return cls(**{k: v for k, v in d.items() if k in RUN_KEYS and v is not None})


@dataclass
class VariantResult:
    """Everything measured for one precision variant: the fields of `schema.VARIANT`."""

    label: str
    precision: str | None
    model: str | None
    server: dict[str, Any]
    status: str = "ok"  # schema.STATUSES
    errors: list[str] = field(default_factory=list)
    metrics: dict[str, Any] = field(default_factory=empty_metrics)
    runs: list[Run] = field(default_factory=list)
    extra: dict[str, Any] = field(default_factory=dict)  # keys: schema.VARIANT_EXTRA (and a newer file's)
    # Entries of `errors` that explain a null metric but did not make the variant fail ("no
    # tokenizer endpoint", "prefill 16384 skipped"); in memory only, see `decisive_first`.
    notes: list[str] = field(default_factory=list, repr=False, compare=False)

    def note(self, text: str) -> None:
        """Add an entry to `errors` that is a note, not a cause of failure."""
        self.notes.append(text)
        self.errors.append(text)

    def decisive_first(self) -> None:
        """Order `errors` causes first, notes after (each in the order they came).

        A failed column shows `errors[0]` (report, TUI, headless lines): that must be the HTTP 500
        or the crash, not the note about the missing tokenizer that happened to come first.
        """
        causes = [e for e in self.errors if e not in self.notes]
        self.errors[:] = causes + [e for e in self.errors if e in self.notes]

    @property
    def causes(self) -> list[str]:
        return [e for e in self.errors if e not in self.notes]

    def to_dict(self) -> dict[str, Any]:
        """The record on disk: its own keys in the table's order, then `extra` as it was filled."""
        own = {"errors": list(self.errors), "runs": [r.to_dict() for r in self.runs]}
        d: dict[str, Any] = {k: own[k] if k in own else getattr(self, k) for k in VARIANT_KEYS}
        d.update(self.extra)
        return d

    @classmethod
    def from_dict(cls, d: Any, where: str = "variant") -> VariantResult:
        """The VariantResult a `to_dict` wrote; RecordError (one line naming the field) otherwise."""
        check_variant_dict(d, where)
        return cls(
            label=d["label"],
            precision=d.get("precision"),
            model=d.get("model"),
            server=dict(d.get("server") or {}),
            status=d.get("status", "ok"),
            errors=list(d.get("errors") or []),
            metrics=empty_metrics() | dict(d.get("metrics") or {}),
            runs=[Run.from_dict(r, f"{where}.runs[{i}]") for i, r in enumerate(d.get("runs") or [])],
            extra={k: v for k, v in d.items() if k not in VARIANT_KEYS},
        )
