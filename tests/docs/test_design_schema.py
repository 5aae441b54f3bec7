"""docs/design.md §5 lists exactly the fields of the results model (src/precmon/core/schema/model.py).

The block between `<!-- schema:begin -->` and `<!-- schema:end -->` is the model rendered by
`render_schema`: every record's keys in the order written, their kind and rules, and what they
mean; `PRECMON_UPDATE_DOCS=1` rewrites it. A field added to the model without this block being
regenerated fails here.
"""

from __future__ import annotations

import os
from pathlib import Path

from precmon.core.schema import (
    Gpu,
    Host,
    HostNode,
    NodePower,
    PowerIdle,
    PowerSource,
    ResultsDoc,
    Run,
    RunExtra,
    ServerInfo,
    VariantResult,
)
from precmon.core.schema.spec import Field, table

from .test_design_doc import section

DESIGN = Path(__file__).resolve().parents[2] / "docs" / "design.md"
BEGIN = "<!-- schema:begin (generated from src/precmon/core/schema/model.py; PRECMON_UPDATE_DOCS=1 pytest tests/docs rewrites it) -->"
END = "<!-- schema:end -->"
RECORDS = (
    ("the document", ResultsDoc),
    ("`host`", Host),
    ("`host.gpus[]`", Gpu),
    ("`host.power_sources[]`", PowerSource),
    ("`host.nodes[]`", HostNode),
    ("a variant (`variants[]`)", VariantResult),
    ("`server` of a variant", ServerInfo),
    ("`power_idle` of a variant", PowerIdle),
    ("`power_by_node[]` of a variant", NodePower),
    ("a run (`runs[]`)", Run),
    ("`extra` of a run", RunExtra),
)


def _rules(f: Field) -> str:
    rules = []
    if f.required:
        rules.append("required")
    if f.always:
        rules.append("always written")
    if f.kind in ("int", "number") and f.ranged:
        rules.append("0 … 1e12")
    if f.derived:
        rules.append("derived")
    if f.legacy:
        rules.append("older files")
    if not f.checked:
        rules.append("not checked")
    if f.choices:
        rules.append(" \\| ".join(f.choices))
    return ", ".join(rules)


def render_schema() -> str:
    lines: list[str] = []
    for title, record in RECORDS:
        lines += [
            f"**{title}** (`{record.__name__}`)",
            "",
            "| key | kind | rules | what |",
            "| --- | --- | --- | --- |",
        ]
        for f in table(record):
            kind = f.kind + (f" of `{f.record.__name__}`" if f.record is not None else "")
            what = f.what.replace("|", "\\|")
            lines.append(f"| `{f.name}` | {kind} | {_rules(f)} | {what} |")
        lines.append("")
    return "\n".join(lines).rstrip("\n")


def test_generated_block_is_the_model():
    text = DESIGN.read_text(encoding="utf-8")
    expected = render_schema()
    sec = section(text, 5)
    assert BEGIN in sec and END in sec, f"§5 lacks the generated schema block ({BEGIN} ... {END})"
    if os.environ.get("PRECMON_UPDATE_DOCS") == "1":
        head, rest = text.split(BEGIN, 1)
        text = f"{head}{BEGIN}\n{expected}\n{END}{rest.split(END, 1)[1]}"
        DESIGN.write_text(text, encoding="utf-8")
    got = text.split(BEGIN, 1)[1].split(END, 1)[0].strip("\n")
    assert got == expected, (
        "docs/design.md §5's schema block differs from the model (PRECMON_UPDATE_DOCS=1 rewrites it)"
    )
