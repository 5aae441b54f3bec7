"""No module outside precmon.core names a metric key literally (issue 27): the registry
(core/registry.py) and the schema (core/schema.py) own them, and every other module reads them
there (`registry.metric(...)`, the cells walker, the field table), so adding or renaming a metric
touches the core's tables and the code that measures it, nothing else.

A string constant anywhere in a module (code, not docstrings: a docstring is never exactly a key)
that equals a registry key (`Metric.key`) counts.

Modules outside core name a metric through `KEY` (core/metric_keys.py): `KEY.decode_tok_s`.
"""

from __future__ import annotations

import ast
from pathlib import Path

from precmon.core import registry

SRC = Path(__file__).resolve().parents[2] / "src" / "precmon"


def offenders() -> dict[str, list[str]]:
    """module → the metric keys it names literally (`file:line key`), for every module outside core."""
    keys = {m.key for m in registry.metrics()}
    found: dict[str, list[str]] = {}
    for path in sorted(SRC.rglob("*.py")):
        rel = path.relative_to(SRC.parent)
        module = ".".join(rel.with_suffix("").parts).removesuffix(".__init__")
        if module == "precmon.core" or module.startswith("precmon.core."):
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        hits = [
            f"{rel}:{node.lineno} {node.value}"
            for node in ast.walk(tree)
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in keys
        ]
        if hits:
            found[module] = hits
    return found


def test_the_scan_finds_a_literal_key(tmp_path: Path):
    """The scan itself can fail: a module naming `decode_tok_s` is caught."""
    keys = {m.key for m in registry.metrics()}
    tree = ast.parse('x = {"decode_tok_s": 1}\n"""decode_tok_s is a docstring"""\n')
    named = [n.value for n in ast.walk(tree) if isinstance(n, ast.Constant) and n.value in keys]
    assert named == ["decode_tok_s"]


def test_no_module_outside_core_names_a_metric_key():
    found = offenders()
    assert not found, "\n".join(h for hits in found.values() for h in hits)


def test_the_key_names_are_the_registrys():
    """`KEY` (core/metric_keys.py) has exactly the registry's keys, each spelled as itself."""
    from dataclasses import fields

    from precmon.core.metric_keys import KEY

    assert [f.name for f in fields(KEY)] == [m.key for m in registry.metrics()]
    assert all(getattr(KEY, f.name) == f.name for f in fields(KEY))
