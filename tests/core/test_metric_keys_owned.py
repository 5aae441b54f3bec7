"""No module outside precmon.core names a metric key literally (issue 27): the registry
(core/registry.py) and the schema (core/schema/__init__.py) own them, and every other module reads them
there (`registry.metric(...)`, the cells walker, the field table), so adding or renaming a metric
touches the core's tables and the code that measures it, nothing else.

A string constant anywhere in a module (code, not docstrings: a docstring is never exactly a key)
that equals a registry key (`Metric.key`) or a key of a variant's `metrics` object
(`Metric.metrics_key`: "concurrency" holds the nested concurrency metrics) counts.

Modules outside core name a metric through `KEY` (core/metric_keys.py): `KEY.decode_tok_s`,
`KEY.concurrency`. The one exception is another tool's own field that happens to be spelled like
a key (`FOREIGN`): it is listed with its module, why, and how many times it is written there, so
a use of the key itself in that module still fails.
"""

from __future__ import annotations

import ast
from pathlib import Path

from precmon.core import registry

SRC = Path(__file__).resolve().parents[2] / "src" / "precmon"


#: (module, string) → (times it is written there, why it is not precmon's key).
FOREIGN = {
    ("precmon.report.importers.llama_benchy", "concurrency"): (2, "llama-benchy's JSON field: its number of users"),
}


def metric_keys() -> set[str]:
    """Every registry key and every key of a variant's `metrics` object."""
    return {m.key for m in registry.metrics()} | {m.metrics_key for m in registry.metrics()}


def offenders() -> dict[str, list[str]]:
    """module → the metric keys it names literally (`file:line key`), for every module outside core."""
    keys = metric_keys()
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
        for (where, key), (times, _why) in FOREIGN.items():
            named = [h for h in hits if h.endswith(f" {key}")]
            if where == module and len(named) == times:
                hits = [h for h in hits if h not in named]
        if hits:
            found[module] = hits
    return found


def test_the_scan_finds_a_literal_key(tmp_path: Path):
    """The scan itself can fail: a module naming `decode_tok_s` or the metrics key `concurrency` is caught."""
    keys = metric_keys()
    tree = ast.parse('x = {"decode_tok_s": 1}\ny = m.get("concurrency")\n"""decode_tok_s is a docstring"""\n')
    named = [n.value for n in ast.walk(tree) if isinstance(n, ast.Constant) and n.value in keys]
    assert named == ["decode_tok_s", "concurrency"]


def test_each_foreign_spelling_is_still_there():
    """An entry of `FOREIGN` whose module no longer writes the string that often is stale: it would
    hide the key's own use."""
    for (module, key), (times, why) in FOREIGN.items():
        path = SRC.parent.joinpath(*module.split(".")).with_suffix(".py")
        tree = ast.parse(path.read_text(encoding="utf-8"))
        written = sum(isinstance(n, ast.Constant) and n.value == key for n in ast.walk(tree))
        assert written == times, f"{module} writes {key!r} {written} times, FOREIGN says {times} ({why})"


def test_no_module_outside_core_names_a_metric_key():
    found = offenders()
    assert not found, "\n".join(h for hits in found.values() for h in hits)


def test_the_key_names_are_the_registrys():
    """`KEY` (core/metric_keys.py) has exactly the registry's keys, then the `metrics` keys that
    are no metric's own key ("concurrency"), each spelled as itself."""
    from dataclasses import fields

    from precmon.core.metric_keys import KEY

    table = registry.metrics()
    expected = list(dict.fromkeys([m.key for m in table] + [m.metrics_key for m in table]))
    assert "concurrency" in expected
    assert [f.name for f in fields(KEY)] == expected
    assert all(getattr(KEY, f.name) == f.name for f in fields(KEY))
