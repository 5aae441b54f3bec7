"""No module outside precmon.core names a run phase literally (issue 27): the phase table
(core/phases.py) owns the names, and every other module reads them there (`phases.DECODE`,
`phases.IDLE`), so a phase is renamed, added or looked for in one place.

Only a *phase use* of a string counts, never the word: "decode" as a table label, a server's
`mode="decode"` or the sweep key "warmup" (a count) are not phases. A string constant equal to a
phase name (`phases.NAMES` and `phases.IDLE`) is a phase use where it is

- compared with a phase: `run.phase == "decode"`, `r.get("phase") != "idle"`,
  `r["phase"] in ("prefill", "decode")` (a phase expression is a name or attribute that says
  `phase`, `x["phase"]` or `x.get("phase")`);
- given to a phase: a `phase=` keyword, a `{"phase": ...}` entry, a parameter named `phase`
  (positionally too: the callee's parameters, and a dataclass's fields, are looked up by name
  over all of src/precmon), a default of such a parameter, or an assignment to a name that
  says `phase` (`PHASES = (("idle", ...), ...)`);
- iterated as phases: `for phase, kind in (("depth_prefill", "pp"), ...)`.
"""

from __future__ import annotations

import ast
from pathlib import Path

from precmon.core import phases

SRC = Path(__file__).resolve().parents[2] / "src" / "precmon"
NAMES = frozenset(phases.NAMES) | {phases.IDLE}


def _says_phase(node: ast.AST) -> bool:
    """A phase expression: `phase`, `x.phase`, `run_phase`, `x["phase"]`, `x.get("phase")`."""
    if isinstance(node, ast.Name):
        return "phase" in node.id.lower()
    if isinstance(node, ast.Attribute):
        return "phase" in node.attr.lower()
    if isinstance(node, ast.Subscript):
        return isinstance(node.slice, ast.Constant) and node.slice.value == "phase"
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "get":
        return bool(node.args) and isinstance(node.args[0], ast.Constant) and node.args[0].value == "phase"
    return False


def _names_in(node: ast.AST | None) -> list[ast.Constant]:
    """The phase-name constants in `node` (itself, or inside literal tuples, lists and sets)."""
    if node is None:
        return []
    return [n for n in ast.walk(node) if isinstance(n, ast.Constant) and isinstance(n.value, str) and n.value in NAMES]


def _callee(call: ast.Call) -> str:
    f = call.func
    return f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else ""


def phase_params(trees: list[ast.Module]) -> dict[str, set[int]]:
    """callable name → the positions of its arguments named like a phase (functions and methods,
    `self`/`cls` not counted; dataclasses by the order of their fields)."""
    out: dict[str, set[int]] = {}
    for tree in trees:
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                args = [a.arg for a in node.args.posonlyargs + node.args.args]
                args = args[1:] if args and args[0] in ("self", "cls") else args
                name = node.name
            elif isinstance(node, ast.ClassDef):
                args = [
                    s.target.id for s in node.body if isinstance(s, ast.AnnAssign) and isinstance(s.target, ast.Name)
                ]
                name = node.name
            else:
                continue
            at = {i for i, a in enumerate(args) if "phase" in a.lower()}
            if at:
                out.setdefault(name, set()).update(at)
    return out


def phase_literals(tree: ast.Module, params: dict[str, set[int]]) -> list[ast.Constant]:
    """The phase-name constants of `tree` used as phases (see the module's docstring)."""
    found: list[ast.Constant] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare):
            sides = [node.left, *node.comparators]
            if any(_says_phase(s) for s in sides):
                found += [c for s in sides if not _says_phase(s) for c in _names_in(s)]
        elif isinstance(node, ast.Call):
            found += [c for kw in node.keywords if kw.arg and "phase" in kw.arg.lower() for c in _names_in(kw.value)]
            for i in params.get(_callee(node), ()):
                if i < len(node.args):
                    found += _names_in(node.args[i])
        elif isinstance(node, ast.Dict):
            for k, v in zip(node.keys, node.values, strict=True):
                if isinstance(k, ast.Constant) and k.value == "phase":
                    found += _names_in(v)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(_says_phase(t) for t in targets):
                found += _names_in(node.value)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            a = node.args
            positional = a.posonlyargs + a.args
            pairs = list(zip(positional[len(positional) - len(a.defaults) :], a.defaults, strict=True))
            pairs += [(arg, d) for arg, d in zip(a.kwonlyargs, a.kw_defaults, strict=True) if d is not None]
            found += [c for arg, d in pairs if "phase" in arg.arg.lower() for c in _names_in(d)]
        elif isinstance(node, (ast.For, ast.comprehension)):
            if any(_says_phase(t) for t in ast.walk(node.target)) and isinstance(
                node.iter, (ast.Tuple, ast.List, ast.Set)
            ):
                found += _names_in(node.iter)
    return sorted(set(found), key=lambda c: (c.lineno, c.col_offset))


def _modules() -> list[tuple[str, Path, ast.Module]]:
    out = []
    for path in sorted(SRC.rglob("*.py")):
        module = ".".join(path.relative_to(SRC.parent).with_suffix("").parts).removesuffix(".__init__")
        out.append((module, path, ast.parse(path.read_text(encoding="utf-8"), str(path))))
    return out


def offenders() -> list[str]:
    """`file:line 'name'` of every phase name used literally outside precmon.core."""
    modules = _modules()
    params = phase_params([tree for _, _, tree in modules])
    hits = []
    for module, path, tree in modules:
        if module == "precmon.core" or module.startswith("precmon.core."):
            continue
        rel = path.relative_to(SRC.parent)
        hits += [f"{rel}:{c.lineno} {c.value!r}" for c in phase_literals(tree, params)]
    return hits


def test_the_scan_finds_each_kind_of_phase_use():
    """The scan can fail: each shape of a phase use is caught, and the word used otherwise is not."""
    source = """
def ok_run(phase, **fields): ...
def read(variant, phase="decode"): ...
class Step:
    phase: str
    size: int
PHASES = (("idle", 1), ("prefill", 2))
a = run.phase == "ttft"
b = r.get("phase") != "warmup"
c = r["phase"] in ("depth_fill", "depth_decode")
d = Run(phase="concurrency")
e = {"phase": "long_context_decode"}
f = ok_run("depth_prefill", x=1)
g = Step("decode", 3)
for phase, kind in (("prefill", "pp"),):
    pass
# not phases: a label, a server's mode, a count, a comparison of something else
t.add_row("decode", tok)
h = value_where(x, mode="decode")
i = {"warmup": 1}
j = m.series == "idle"
"""
    tree = ast.parse(source)
    got = [(c.lineno, c.value) for c in phase_literals(tree, phase_params([tree]))]
    assert got == [
        (3, "decode"),
        (7, "idle"),
        (7, "prefill"),
        (8, "ttft"),
        (9, "warmup"),
        (10, "depth_fill"),
        (10, "depth_decode"),
        (11, "concurrency"),
        (12, "long_context_decode"),
        (13, "depth_prefill"),
        (14, "decode"),
        (15, "prefill"),
    ]


def test_no_module_outside_core_names_a_phase():
    found = offenders()
    assert not found, "phase names written as strings (use precmon.core.phases):\n" + "\n".join(found)
