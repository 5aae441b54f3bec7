"""The results model as a JSON Schema (draft 2020-12), for tools other than precmon.

Read off the same declarations as precmon's own checks (`spec.table`), so the published file
(docs/schema/precmon.results-1.json; `python -m precmon.core.schema.json_schema` prints it, and
tests/core/test_json_schema.py holds the file to it) accepts what `precmon report` accepts: every
declared field by its kind, numbers from 0 to MAX_VALUE where ranged (in a run, only where it is
valid: `ok` is not false), the registry's metrics by their shapes, keys a newer file adds allowed.
"""

from __future__ import annotations

import json
from typing import Any

from precmon.core import registry
from precmon.core.schema.model import ResultsDoc, Run, VariantResult
from precmon.core.schema.spec import MAX_VALUE, SCHEMA, Field, table

ID = "https://precmon.dev/schema/precmon.results-1.json"
SIZES = "^[1-9][0-9]*$"  # prompt or context tokens, stream counts
DEPTHS = "^[0-9]+$"  # a context depth may be 0 (llama-bench's d0)


def _number(integer: bool = False, ranged: bool = True, nullable: bool = True) -> dict[str, Any]:
    kind = "integer" if integer else "number"
    out: dict[str, Any] = {"type": [kind, "null"] if nullable else kind}
    if ranged:
        out |= {"minimum": 0, "maximum": MAX_VALUE}
    return out


def _field(f: Field, valid: bool) -> dict[str, Any]:
    """The schema of one declared field (`valid`: a run's numbers are ranged)."""
    nullable = not f.required
    out: dict[str, Any]
    if f.kind == "bool":
        out = {"type": "boolean"}
    elif f.choices:
        out = {"enum": list(f.choices)}
    elif f.kind == "text":
        out = {"type": ["string", "null"] if nullable else "string"}
    elif f.kind in ("int", "number"):
        out = _number(f.kind == "int", f.ranged and valid)
    elif f.kind == "object":
        out = _object(f.record, valid) if f.record is not None else {"type": ["object", "null"]}
    elif f.kind == "texts":
        out = {"type": ["array", "null"], "items": {"type": "string"}}
    elif f.kind == "numbers":
        out = {"type": ["array", "null"], "items": _number()}
    elif f.kind == "objects":
        assert f.record is not None
        out = {"type": ["array", "null"], "items": _object(f.record, valid, nullable=False)}
    elif f.kind == "records":
        name = "run" if f.record is Run else "variant"
        out = {"type": "array" if f.required else ["array", "null"], "items": {"$ref": f"#/$defs/{name}"}}
    elif f.kind == "metrics":
        out = metrics_schema()
    elif f.kind == "stats":
        out = stats_schema()
    else:  # "json": any value
        out = {}
    if f.what:
        out["description"] = f.what
    return out


def _object(record: type | None, valid: bool = True, nullable: bool = True) -> dict[str, Any]:
    fields = table(record) if record is not None else ()
    out: dict[str, Any] = {
        "type": ["object", "null"] if nullable else "object",
        "properties": {f.name: _field(f, valid) for f in fields if f.checked},
    }
    required = [f.name for f in fields if f.required]
    if required:
        out["required"] = required
    return out


def metrics_schema() -> dict[str, Any]:
    """A variant's `metrics`: each registry metric by its shape (core/registry.py)."""
    props: dict[str, Any] = {}
    number = _number()
    for m in registry.metrics():
        if m.shape == "scalar":
            props[m.key] = number
        elif m.shape == "sized":
            keys = DEPTHS if m.size_key == "depth_tokens" else SIZES
            props[m.key] = {
                "type": ["object", "null"],
                "propertyNames": {"pattern": keys},
                "additionalProperties": number,
            }
        elif m.shape == "grid":
            inner = {"type": ["object", "null"], "propertyNames": {"pattern": SIZES}, "additionalProperties": number}
            props[m.key] = {
                "type": ["object", "null"],
                "propertyNames": {"pattern": DEPTHS},
                "additionalProperties": inner,
            }
        else:  # nested: {level: {field: number}}, older files' names too
            level = props.setdefault(
                m.metrics_key,
                {
                    "type": ["object", "null"],
                    "propertyNames": {"pattern": SIZES},
                    "additionalProperties": {"type": "object", "properties": {}},
                },
            )
            level["additionalProperties"]["properties"] |= {n: number for n in (m.field, m.legacy_field) if n}
    props["model_size_bytes"] = _number(ranged=False)
    return {"type": ["object", "null"], "properties": props}


def stats_schema() -> dict[str, Any]:
    """`metrics_stats`: a row key → n, median, mean, stdev, cv, ci95 [low, high]."""
    entry = {
        "type": "object",
        "properties": {
            "n": _number(integer=True),
            **{k: _number() for k in ("median", "mean", "stdev", "cv")},
            "ci95": {
                "type": ["array", "null"],
                "prefixItems": [{"type": "number"}, {"type": "number"}],
                "minItems": 2,
                "maxItems": 2,
            },
        },
    }
    return {"type": ["object", "null"], "additionalProperties": entry}


def _run() -> dict[str, Any]:
    """A run: ranged numbers where it is valid; an invalid run keeps what the server said."""
    return {
        "if": {"properties": {"ok": {"const": False}}, "required": ["ok"]},
        "then": _object(Run, valid=False, nullable=False),
        "else": _object(Run, valid=True, nullable=False),
    }


def results_schema() -> dict[str, Any]:
    """The whole document's JSON Schema."""
    doc = _object(ResultsDoc, nullable=False)
    doc["properties"]["schema"] = {"const": SCHEMA, "description": "the schema's name and version"}
    doc["required"] = ["schema", "variants"]
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": ID,
        "title": SCHEMA,
        "description": "A precmon results file (docs/design.md §5), generated from src/precmon/core/schema/model.py.",
        **doc,
        "$defs": {"run": _run(), "variant": _object(VariantResult, nullable=False)},
    }


def render() -> str:
    """The published file's text."""
    return json.dumps(results_schema(), indent=2, ensure_ascii=False) + "\n"


if __name__ == "__main__":
    print(render(), end="")
