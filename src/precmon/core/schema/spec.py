"""How one field of the results model is declared, and the field table read off the declaration.

The model (core/schema/model.py) declares each record as a dataclass whose fields carry a `spec`:
what the key means, whether it is required, range-checked or derived from a server's numbers.
`table(Record)` reads the dataclass back into a tuple of `Field` rows — the key on disk, its kind
(from the annotation), its rules — and everything that needs the schema walks those rows: the
checks (core/schema/check.py), the codec (core/schema/codec.py), the JSON Schema
(core/schema/json_schema.py) and docs/design.md §5's generated table. So the schema is written
once, as the types the code uses.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from dataclasses import dataclass
from typing import Any, Literal

SCHEMA = "precmon.results/1"
#: Largest magnitude a measured number may have (no tok/s, W, J, GB or token count reaches it).
MAX_VALUE = 1e12
#: A variant's `status`, best first.
STATUSES = ("ok", "partial", "failed")
NOT_A_RESULTS_FILE = f"not a precmon results file (schema must be {SCHEMA!r})"

#: How a field is read. "text", "int", "number", "bool": one JSON value; "object": an object (with
#: `fields` where its keys are known); "texts" / "numbers": a list of them; "objects": a list of
#: objects of `fields`; "records": a list of runs or variants (checked as such); "metrics": a
#: variant's `metrics`, walked by the registry (core/cells.py); "stats": `metrics_stats`; "json":
#: any JSON value.
Kind = Literal[
    "text", "int", "number", "bool", "object", "texts", "numbers", "objects", "records", "metrics", "stats", "json"
]
#: The metadata key a model field's `Spec` is stored under.
SPEC = "precmon.schema"


@dataclass(frozen=True)
class Spec:
    """What a declared field says beyond its type (`spec(...)` makes one).

    Attributes:
        what: one line for people (docs/design.md §5, the JSON Schema's descriptions).
        required: absence is a fault (`label`, `phase`, `variants`).
        ranged: a number from 0 to MAX_VALUE (in a run: only where the run is valid; an invalid
            run keeps what the server said and needs only the right type).
        checked: readers check its type; False: documented and typed, read as any JSON (the
            loader never checked it, and a file that holds something else still loads).
        legacy: written by older versions only (read, and kept when read; precmon never sets it).
        derived: a run figure derived from the server's numbers and the client's clock: negative
            or non-finite makes the run invalid (`measure/checks.impossible_derived`).
        always: written even when null or empty (a variant's own keys, the document's).
        choices: the values a text may take.
        kind: the kind, where the annotation alone cannot say it ("metrics", "stats", "json").
        memory: kept in memory only, never written or read (a variant's notes).
    """

    what: str = ""
    required: bool = False
    ranged: bool = True
    checked: bool = True
    legacy: bool = False
    derived: bool = False
    always: bool = False
    choices: tuple[str, ...] = ()
    kind: Kind | None = None
    memory: bool = False


def spec(what: str = "", *, default: Any = None, factory: Any = None, **rules: Any) -> Any:
    """A model field: its default (None unless `factory` makes one) and its `Spec`."""
    meta = {SPEC: Spec(what, **rules)}
    if factory is not None:
        return dataclasses.field(default_factory=factory, metadata=meta)
    if rules.get("required") and default is None:
        return dataclasses.field(metadata=meta)
    return dataclasses.field(default=default, metadata=meta)


@dataclass(frozen=True)
class Field:
    """One key of a results record, read off the model: its name, kind and rules.

    Attributes:
        name: the key on disk (never renamed) and the attribute in memory.
        kind: see `Kind`.
        spec: the rules declared with it.
        record: the dataclass of an "object", "objects" or "records" field whose keys are known.
    """

    name: str
    kind: Kind
    spec: Spec
    record: type | None = None

    @property
    def fields(self) -> tuple[Field, ...]:
        """The known keys of an object, or of each item of "objects" / "records"."""
        return table(self.record) if self.record is not None else ()

    @property
    def required(self) -> bool:
        return self.spec.required

    @property
    def ranged(self) -> bool:
        return self.spec.ranged

    @property
    def checked(self) -> bool:
        return self.spec.checked

    @property
    def legacy(self) -> bool:
        return self.spec.legacy

    @property
    def derived(self) -> bool:
        return self.spec.derived

    @property
    def always(self) -> bool:
        return self.spec.always

    @property
    def choices(self) -> tuple[str, ...]:
        return self.spec.choices

    @property
    def what(self) -> str:
        return self.spec.what


_TABLES: dict[type, tuple[Field, ...]] = {}


def table(record: type) -> tuple[Field, ...]:
    """The fields of a model record in declaration order (the order written), in-memory-only
    fields left out. The kind comes from the annotation unless the spec names one."""
    known = _TABLES.get(record)
    if known is None:
        known = _TABLES[record] = _read(record)
    return known


def _read(record: type) -> tuple[Field, ...]:
    hints = typing.get_type_hints(record)
    out = []
    for f in dataclasses.fields(record):
        s = f.metadata.get(SPEC)
        if s is None or s.memory:
            continue
        kind, sub = _kind_of(hints[f.name])
        out.append(Field(f.name, s.kind or kind, s, sub))
    return tuple(out)


def _kind_of(annotation: Any) -> tuple[Kind, type | None]:
    """The kind of a field from its type: `str | None` → text, `list[Run]` → records, ..."""
    members = [a for a in typing.get_args(annotation) if a is not type(None)]
    if typing.get_origin(annotation) in (typing.Union, types.UnionType) and len(members) == 1:
        annotation = members[0]
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if dataclasses.is_dataclass(annotation):
        return "object", annotation  # type: ignore[return-value]
    if origin is list and args:
        item = args[0]
        if dataclasses.is_dataclass(item):
            return ("records" if getattr(item, "RECORD", False) else "objects"), item  # type: ignore[return-value]
        return {str: "texts", float: "numbers"}.get(item, "json"), None  # type: ignore[return-value]
    if origin is dict:
        return "object", None
    if typing.get_origin(annotation) is Literal:
        return "text", None
    scalar = {str: "text", int: "int", float: "number", bool: "bool"}
    return scalar.get(annotation, "json"), None  # type: ignore[return-value]


def names(record: type, *, legacy: bool = False) -> tuple[str, ...]:
    """The keys of a record, in order; `legacy=False` leaves out those only older files have."""
    return tuple(f.name for f in table(record) if legacy or not f.legacy)
