"""Load a results file once and validate it, so the report never meets a value it cannot show.

`load_document` reads, parses and checks every field the report reads: the renderers never meet a
wrong type, a non-finite or impossible number, or a recursion bomb. Every fault is a
`DocumentError` whose message is one line naming the file and the field path, e.g.
`r.json: variants[0].metrics.decode_tok_s: expected a number, got "fast"`; the commands exit 2.

Impossible values (a negative prefill, 1e308 tok/s, "NaN" as a string, bare NaN/Infinity) are
input errors, not "n/a": a file holding them was not written by precmon, or was damaged, and a
table that silently drops them would hide that. Runs marked invalid (`ok: false`) only need the
right types: precmon keeps what the server said there, and their values are excluded from every
median and series.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from precmon.core import settings as plan_settings
from precmon.core.schema import ResultsDoc, from_json
from precmon.core.schema.check import Checker, check_document
from precmon.file_args import FileArgError, open_file_arg
from precmon.report.model import DocumentError
from precmon.untrusted import redact_tree, visible

#: Deeper than this is not a results file (the schema nests 5 levels; a bomb nests thousands).
MAX_DEPTH = 32
#: Largest file `load_document` reads, in bytes.
MAX_BYTES = 256 * 1024 * 1024


def _depth_ok(value: Any, limit: int) -> bool:
    """True when `value` nests at most `limit` containers deep (iterative: no recursion)."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        v, depth = stack.pop()
        if isinstance(v, (dict, list)):
            if depth > limit:
                return False
            children = v.values() if isinstance(v, dict) else v
            stack.extend((c, depth + 1) for c in children if isinstance(c, (dict, list)))
    return True


def _check_settings(c: Checker, settings: dict[str, Any]) -> None:
    """`settings`: each stored setting (`precmon.core.settings.STORED`: the plan, and how the
    results are judged, as `max_kld`) of its kind and within the bounds the flags and the sweep
    file apply (a `repeats` of 0 was never run). An empty list is a plan without that part; an
    endpoint only needs to be a string (a later version may add one)."""
    for row in plan_settings.STORED:
        key, value = row.name, settings.get(row.name)
        if row.kind == plan_settings.CHOICE:
            c.text(value, f"settings.{key}")
            continue
        if row.kind == plan_settings.INTS and isinstance(value, list):
            for i, v in enumerate(value):
                c.number(v, f"settings.{key}[{i}]", integer=True, ranged=False)  # the row's bounds, below
        else:  # an INTS key holding one number: checked as that number
            c.number(
                value, f"settings.{key}", integer=row.kind in (plan_settings.INT, plan_settings.INTS), ranged=False
            )
            value = [value] if row.kind == plan_settings.INTS and value is not None else value
        problem = row.problem(value) if value != [] else None
        if problem:
            c.raw(f"settings.{key}: {problem}")


def validate(doc: Any, name: str) -> ResultsDoc:
    """Check a parsed results document; return it as the typed model.

    Raises:
        DocumentError: one line, `<name>: <field path>: expected ..., got ...`.
    """
    c = Checker(f"{name}: ", DocumentError)
    if not _depth_ok(doc, MAX_DEPTH):
        raise DocumentError(f"{name}: nested deeper than {MAX_DEPTH} levels: not a precmon results file")
    d = c.obj(doc, "the document", optional=False)
    check_document(c, d)  # the schema, then every declared field (core/schema/model.py)
    _check_settings(c, c.obj(d.get("settings"), "settings"))
    return from_json(ResultsDoc, d)


def _reject_constant(token: str) -> Any:
    raise ValueError(f"{token} is not a JSON number")


def read_json(path: Path | str) -> Any:
    """Read and strictly parse a JSON file, credentials redacted (`untrusted.redact_tree`).

    Raises:
        DocumentError: one line that starts with the file name (a folder, missing, unreadable,
            too large, not UTF-8, not strict JSON, nested too deep).
    """
    p = Path(path)
    name = visible(str(path))
    try:
        if p.is_dir():
            raise DocumentError(f"{name}: is a folder, not a results file")
        if p.stat().st_size > MAX_BYTES:
            raise DocumentError(f"{name}: larger than {MAX_BYTES // 2**20} MiB: not a results file")
        with open_file_arg(p) as f:  # bounded: a device such as /dev/zero has size 0 and no end
            raw = f.read(MAX_BYTES + 1)
        if len(raw) > MAX_BYTES:
            raise DocumentError(f"{name}: larger than {MAX_BYTES // 2**20} MiB: not a results file")
    except FileNotFoundError:
        raise DocumentError(f"{name}: no such file") from None
    except FileArgError as exc:
        raise DocumentError(f"{name}: {exc}") from None
    except OSError as exc:
        raise DocumentError(f"{name}: cannot read: {exc.strerror or exc}") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise DocumentError(f"{name}: not UTF-8 text (byte {raw[exc.start]:#04x} at offset {exc.start})") from None
    try:
        doc = json.loads(text, parse_constant=_reject_constant)
    except json.JSONDecodeError as exc:
        raise DocumentError(f"{name}: not JSON (line {exc.lineno}: {exc.msg})") from None
    except RecursionError:
        raise DocumentError(f"{name}: nested too deep: not a precmon results file") from None
    except ValueError as exc:
        raise DocumentError(f"{name}: not strict JSON: {visible(str(exc), limit=80)}") from None
    # a file written before precmon redacted credentials shows none either (untrusted.redact_tree)
    return redact_tree(doc)


def load_document(path: Path | str) -> ResultsDoc:
    """Read, parse and validate a results file: the one way the report and compare load one.

    Raises:
        DocumentError: one line that starts with the file name (a folder, missing, unreadable,
            not UTF-8, not strict JSON, too deep, or a field of the wrong type or range).
    """
    return validate(read_json(path), visible(str(path)))
