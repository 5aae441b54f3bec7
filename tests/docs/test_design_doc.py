"""docs/design.md §4 lists exactly the metrics of the registry (src/precmon/core/registry.py).

Two checks, because §4 has two parts:
- the generated block between `<!-- registry:begin -->` and `<!-- registry:end -->` is the
  registry rendered by `render_registry` (every key, label, unit, direction, ratio kind, shape,
  rounding, aggregation and glossary definition); `PRECMON_UPDATE_DOCS=1` rewrites it;
- the hand-written definition table names every registry key, and no key the registry lacks.
A metric added to the registry without its definition in §4, or a §4 row for a metric that was
removed, fails here.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from precmon.core import registry

DESIGN = Path(__file__).resolve().parents[2] / "docs" / "design.md"
BEGIN = "<!-- registry:begin (generated from src/precmon/core/registry.py; PRECMON_UPDATE_DOCS=1 pytest tests/docs rewrites it) -->"
END = "<!-- registry:end -->"
DEFINITIONS_HEADER = "| metric (key) |"


def render_registry() -> str:
    """The registry as §4's generated block: one table row per metric, then the glossary."""
    lines = [
        "| key | label | unit | better | ratio | shape | digits | aggregate | glossary |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for m in registry.metrics():
        key = f"`{m.key}`" + (f" (`{m.metrics_key}.*.{m.field}`)" if m.metrics_key != m.key else "")
        term = m.definition.term if m.definition else ""
        lines.append(
            f"| {key} | {m.label} | {m.unit} | {m.better} | {m.ratio_kind} | {m.shape} | {m.digits} "
            f"| {m.aggregate} | {term} |"
        )
    lines += ["", "Glossary (under every export and in the TUI help, in this order):", ""]
    lines += [f"- **{term}**: {text}" for term, text in registry.glossary()]
    return "\n".join(lines)


def section(text: str, number: int) -> str:
    """The text of `## N.` up to the next `## ` heading."""
    match = re.search(rf"^## {number}\. .*?(?=^## |\Z)", text, flags=re.M | re.S)
    assert match, f"docs/design.md has no section §{number}"
    return match.group(0)


def generated_block(sec: str) -> str:
    assert BEGIN in sec and END in sec, f"§4 lacks the generated registry block ({BEGIN} ... {END})"
    return sec.split(BEGIN, 1)[1].split(END, 1)[0].strip("\n")


def definition_keys(sec: str) -> set[str]:
    """Backticked names in the first column of §4's definition table (`ttft_s[N]` → `ttft_s`)."""
    rows = sec.split(DEFINITIONS_HEADER, 1)
    assert len(rows) == 2, f"§4 lacks its definition table ({DEFINITIONS_HEADER} ...)"
    keys: set[str] = set()
    for line in rows[1].splitlines()[2:]:
        if not line.startswith("|"):
            break
        first_cell = line.split("|")[1]
        keys |= {re.sub(r"\[.*?\]$", "", k) for k in re.findall(r"`([^`]+)`", first_cell)}
    return keys


def test_generated_block_is_the_registry():
    text = DESIGN.read_text(encoding="utf-8")
    expected = render_registry()
    if os.environ.get("PRECMON_UPDATE_DOCS") == "1":
        generated_block(section(text, 4))  # both markers are there
        head, rest = text.split(BEGIN, 1)
        text = f"{head}{BEGIN}\n{expected}\n{END}{rest.split(END, 1)[1]}"
        DESIGN.write_text(text, encoding="utf-8")
    got = generated_block(section(text, 4))
    assert got == expected, (
        "docs/design.md §4's registry block differs from the registry (PRECMON_UPDATE_DOCS=1 rewrites it)"
    )


def test_definition_table_names_every_registry_metric_and_no_other():
    listed = definition_keys(section(DESIGN.read_text(encoding="utf-8"), 4))
    keys = {m.key for m in registry.metrics()}
    known = keys | {m.metrics_key for m in registry.metrics()}
    assert not keys - listed, f"registry metrics without a definition in docs/design.md §4: {sorted(keys - listed)}"
    assert not listed - known, f"docs/design.md §4 defines metrics the registry lacks: {sorted(listed - known)}"


def test_every_glossary_definition_is_in_section_4():
    sec = section(DESIGN.read_text(encoding="utf-8"), 4)
    missing = [term for term, text in registry.glossary() if text not in sec]
    assert not missing, f"glossary definitions missing from docs/design.md §4: {missing}"
