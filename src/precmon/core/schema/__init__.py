"""The results model `precmon.results/1` (docs/design.md §5): declared once, as dataclasses.

`model` declares every record (a run, a variant, the host, the document) with a `spec` per field;
`spec.table` reads a record back into field rows that the checks (`check`), the JSON codec
(`codec`), the published JSON Schema (`json_schema`, docs/schema/precmon.results-1.json) and
docs/design.md §5's field table all walk. Adding a result field: one `spec(...)` line in
`model.py` and the code that measures it.
"""

from __future__ import annotations

from precmon.core.schema.check import RecordError
from precmon.core.schema.codec import from_json, load, run_from_json, to_json, variant_from_json
from precmon.core.schema.model import (
    Fit,
    Gpu,
    Host,
    HostNode,
    NodePower,
    PowerIdle,
    PowerSource,
    Preflight,
    Quality,
    ResultsDoc,
    Run,
    RunExtra,
    ServerInfo,
    VariantResult,
)
from precmon.core.schema.spec import MAX_VALUE, NOT_A_RESULTS_FILE, SCHEMA, STATUSES, Field, names, table

#: The run fields by kind, and those derived from the server's numbers.
RUN_INT_FIELDS = tuple(f.name for f in table(Run) if f.kind == "int" and not f.legacy)
RUN_FLOAT_FIELDS = tuple(f.name for f in table(Run) if f.kind == "number" and not f.legacy)
DERIVED_FIELDS = tuple(f.name for f in table(Run) if f.derived)

__all__ = [
    "DERIVED_FIELDS",
    "MAX_VALUE",
    "NOT_A_RESULTS_FILE",
    "RUN_FLOAT_FIELDS",
    "RUN_INT_FIELDS",
    "SCHEMA",
    "STATUSES",
    "Field",
    "Fit",
    "Gpu",
    "Host",
    "HostNode",
    "NodePower",
    "PowerIdle",
    "PowerSource",
    "Preflight",
    "Quality",
    "RecordError",
    "ResultsDoc",
    "Run",
    "RunExtra",
    "ServerInfo",
    "VariantResult",
    "from_json",
    "load",
    "names",
    "run_from_json",
    "table",
    "to_json",
    "variant_from_json",
]
