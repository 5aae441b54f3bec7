"""Validation of results records by the model's declarations (core/schema/model.py): one rule set.

`report.load.load_document` (a results file for the report) and `codec.load` (a record read back
for `--resume` or from the journal) both walk the field tables (`spec.table`) here, so a record
the one accepts the other accepts, and their messages are the same one line:
`<field path>: expected <what>, got <the value as JSON>`, e.g.
`variants[0].metrics.decode_tok_s: expected a number, got "fast"` (the loader puts the file name
in front). A `Checker` raises the caller's error class with the caller's prefix.
"""

from __future__ import annotations

import json
from typing import Any, NoReturn

from precmon.core import cells
from precmon.core.schema.model import ResultsDoc, Run, VariantResult
from precmon.core.schema.spec import MAX_VALUE, NOT_A_RESULTS_FILE, SCHEMA, Field, table
from precmon.untrusted import visible

MISSING: Any = object()  # a required key that is absent: "got nothing"


class RecordError(ValueError):
    """A stored record has a field of the wrong type; str() is one line naming the field."""


def shown(value: Any) -> str:
    """The offending value as JSON, short and safe to print."""
    if value is MISSING:
        return "nothing"
    try:
        text = json.dumps(value, ensure_ascii=False, allow_nan=True)
    except (TypeError, ValueError, RecursionError):
        text = type(value).__name__
    if len(text) > 40:
        text = text[:37] + "..."
    return visible(text)


class Checker:
    """Checks values one by one; `fail` raises `error(prefix + "<path>: expected <what>, got <value>")`."""

    def __init__(self, prefix: str = "", error: type[Exception] = RecordError) -> None:
        self.prefix = prefix
        self.error = error

    def raw(self, text: str) -> NoReturn:
        raise self.error(f"{self.prefix}{text}")

    def fail(self, path: str, what: str, value: Any) -> NoReturn:
        self.raw(f"{path}: expected {what}, got {shown(value)}")

    def obj(self, value: Any, path: str, optional: bool = True) -> dict[str, Any]:
        if value is None and optional:
            return {}
        if not isinstance(value, dict):
            self.fail(path, "an object", value)
        return value

    def sized(self, value: Any, path: str, zero: bool = False) -> dict[str, Any]:
        """An object keyed by token counts or stream counts ("512", "4"): the report's row names;
        `zero`: a context depth, where 0 is one (llama-bench's d0)."""
        d = self.obj(value, path)
        low = -1 if zero else 0
        for key in d:
            if not (key.isascii() and key.isdigit() and low < int(key) <= MAX_VALUE):
                self.fail(path, "depths (integers >= 0) as keys" if zero else "sizes (positive integers) as keys", key)
        return d

    def container(self, value: Any, path: str, keys: cells.Keys) -> dict[str, Any]:
        """`cells.Container` for the walk over a variant's metrics."""
        return self.obj(value, path) if keys == "fields" else self.sized(value, path, zero=keys == "depths")

    def lst(self, value: Any, path: str) -> list[Any]:
        if value is None:
            return []
        if not isinstance(value, list):
            self.fail(path, "a list", value)
        return value

    def text(self, value: Any, path: str, optional: bool = True) -> None:
        if not (isinstance(value, str) or (optional and value is None)):
            self.fail(path, "a string", value)

    def number(self, value: Any, path: str, integer: bool = False, ranged: bool = True) -> None:
        """None, or a finite int/float (bools are not numbers); `ranged`: 0 ≤ value ≤ MAX_VALUE."""
        if value is None:
            return
        kinds = (int,) if integer else (int, float)
        if isinstance(value, bool) or not isinstance(value, kinds):
            self.fail(path, "an integer" if integer else "a number", value)
        if value != value or value in (float("inf"), float("-inf")):
            self.fail(path, "a finite number", value)
        if ranged and not 0 <= value <= MAX_VALUE:
            self.fail(path, f"{'an integer' if integer else 'a number'} from 0 to {MAX_VALUE:g}", value)

    def numbers(self, value: Any, path: str) -> None:
        for i, v in enumerate(self.lst(value, path)):
            self.number(v, f"{path}[{i}]")

    def texts(self, value: Any, path: str) -> None:
        for i, v in enumerate(self.lst(value, path)):
            self.text(v, f"{path}[{i}]", optional=False)


def check_fields(c: Checker, d: dict[str, Any], table: tuple[Field, ...], path: str, valid: bool = True) -> None:
    """Check the keys of `d` that `table` knows (in its order); other keys are a newer file's: kept."""
    for f in table:
        if f.checked:
            _check_field(c, f, d.get(f.name, MISSING), _join(path, f.name), valid)


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def _check_field(c: Checker, f: Field, value: Any, path: str, valid: bool) -> None:
    if value is MISSING and not f.required:
        return
    if f.kind == "bool":
        if not isinstance(value, bool):
            c.fail(path, "true or false", value)
    elif f.choices:
        if value not in f.choices:
            c.fail(path, " or ".join(f'"{s}"' for s in f.choices), value)
    elif f.kind == "text":
        c.text(value, path, optional=not f.required)
    elif f.kind in ("int", "number"):
        c.number(None if value is MISSING else value, path, integer=f.kind == "int", ranged=f.ranged and valid)
    elif f.kind == "object":
        check_fields(c, c.obj(value, path), f.fields, path, valid)
    elif f.kind == "texts":
        c.texts(value, path)
    elif f.kind == "numbers":
        c.numbers(value, path)
    elif f.kind == "objects":
        for i, item in enumerate(c.lst(value, path)):
            check_fields(c, c.obj(item, f"{path}[{i}]", optional=False), f.fields, f"{path}[{i}]")
    elif f.kind == "records":
        if f.required and not isinstance(value, list):
            c.fail(path, "a list", value)
        check = check_run if f.record is Run else check_variant
        for i, item in enumerate(c.lst(value, path)):
            check(c, item, f"{path}[{i}]")
    elif f.kind == "metrics":
        check_metrics(c, c.obj(value, path), path)
    elif f.kind == "stats":
        check_stats(c, c.obj(value, path), path)


def check_run(c: Checker, run: Any, path: str) -> None:
    """A run: its numbers in range where it is valid (`ok` not false), the right types otherwise."""
    r = c.obj(run, path, optional=False)
    check_fields(c, r, table(Run), path, valid=r.get("ok", True) is not False)


def check_variant(c: Checker, variant: Any, path: str) -> None:
    """A variant, its metrics and statistics, and its runs."""
    check_fields(c, c.obj(variant, path, optional=False), table(VariantResult), path)


def check_document(c: Checker, doc: dict[str, Any]) -> None:
    """A document's `schema` first (anything else is not a results file), then every field."""
    if doc.get("schema") != SCHEMA:
        c.raw(NOT_A_RESULTS_FILE)
    check_fields(c, doc, table(ResultsDoc), "")


def check_record(c: Checker, record: type, value: Any, path: str) -> None:
    """`value` as a `record` of the model: a run and a variant by their own rules."""
    if record is Run:
        check_run(c, value, path)
    elif record is VariantResult:
        check_variant(c, value, path)
    elif record is ResultsDoc:
        check_document(c, c.obj(value, path or "the document", optional=False))
    else:
        check_fields(c, c.obj(value, path, optional=False), table(record), path)


def check_metrics(c: Checker, m: dict[str, Any], path: str) -> None:
    """Every registry cell a finite number from 0 to MAX_VALUE (or null), each object of the right
    keys; keys a later version adds may hold any JSON, but a number there must be a real one."""
    for cell in cells.metric_cells(m, c.container, path):
        c.number(cell.value, cell.path)
    for key, v in m.items():
        if isinstance(v, float) and v != v:
            c.fail(f"{path}.{key}", "a finite number", v)
    c.number(m.get("model_size_bytes"), f"{path}.model_size_bytes", ranged=False)


def check_stats(c: Checker, stats: dict[str, Any], path: str) -> None:
    """`metrics_stats` (docs/design.md §5): {key: {n, median, mean, stdev, cv, ci95: [low, high]}}."""
    for key, entry in stats.items():
        p = f"{path}.{key}"
        st = c.obj(entry, p, optional=False)
        c.number(st.get("n"), f"{p}.n", integer=True)
        for field in ("median", "mean", "stdev", "cv"):
            c.number(st.get(field), f"{p}.{field}")
        ci = st.get("ci95")
        if ci is not None:
            if not isinstance(ci, list) or len(ci) != 2:
                c.fail(f"{p}.ci95", "[low, high]", ci)
            for i, bound in enumerate(ci):
                c.number(bound, f"{p}.ci95[{i}]", ranged=False)  # a wide interval may reach below 0
                if bound is None:
                    c.fail(f"{p}.ci95[{i}]", "a number", bound)
            if ci[0] > ci[1]:
                c.fail(f"{p}.ci95", "low <= high", ci)
