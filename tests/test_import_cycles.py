"""No import circle among precmon's modules: each module can be read, tested and replaced on its own.

The graph is built from the source with `ast`, not by importing it: every `import` and
`from … import` anywhere in a module counts (relative or absolute, at the top, inside a function,
or under `if TYPE_CHECKING:`), since a circle that only a type checker follows is still two modules
that cannot be understood apart. `from a import b` is an edge to the module `a.b` where that is a
module, else to `a` (a name defined there).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src"
ROOT = "precmon"


def module_files(src: Path = SRC, root: str = ROOT) -> dict[str, Path]:
    """Every module of the package under `src`, by dotted name (a package by its own name)."""
    out = {}
    for path in sorted((src / root).rglob("*.py")):
        parts = list(path.relative_to(src).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


def _targets(node: ast.AST, module: str, is_package: bool, files: dict[str, Path]) -> Iterator[str]:
    """The modules of `files` one import statement reaches."""
    if isinstance(node, ast.Import):
        for alias in node.names:
            parts = alias.name.split(".")
            # `import a.b.c` runs a.b.c; an outside module or a missing one is no edge
            found = [".".join(parts[:i]) for i in range(len(parts), 0, -1) if ".".join(parts[:i]) in files]
            yield from found[:1]
    elif isinstance(node, ast.ImportFrom):
        if node.level:
            package = module if is_package else module.rpartition(".")[0]
            parts = package.split(".")
            base = parts[: len(parts) - (node.level - 1)]
            head = ".".join([*base, *([node.module] if node.module else [])])
        else:
            head = node.module or ""
        for alias in node.names:
            if f"{head}.{alias.name}" in files:
                yield f"{head}.{alias.name}"
            elif head in files:
                yield head


def import_graph(src: Path = SRC, root: str = ROOT) -> dict[str, set[str]]:
    """module → the modules of the package it imports (itself excluded)."""
    files = module_files(src, root)
    graph: dict[str, set[str]] = {}
    for module, path in files.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        is_package = path.name == "__init__.py"
        targets = {t for node in ast.walk(tree) for t in _targets(node, module, is_package, files)}
        graph[module] = targets - {module}
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []
    counter = 0

    def visit(v: str) -> None:
        nonlocal counter
        index[v] = low[v] = counter
        counter += 1
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return sorted(out)


def test_no_import_cycle_among_precmons_modules() -> None:
    found = cycles(import_graph())
    assert not found, "import circles:\n" + "\n".join(" ↔ ".join(c) for c in found)


def _write(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")


def test_the_graph_sees_relative_lazy_and_type_checking_imports(tmp_path: Path) -> None:
    """A circle closed by a relative import, one under TYPE_CHECKING and one inside a function
    are each found; names imported from a package are an edge to the package only."""
    _write(
        tmp_path,
        {
            "pkg/__init__.py": "",
            "pkg/a.py": "from . import b\n",
            "pkg/b.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pkg.a import X\n",
            "pkg/c.py": "def f():\n    from .sub import d\n",
            "pkg/sub/__init__.py": "NAME = 1\n",
            "pkg/sub/d.py": "from ..c import f\nfrom pkg.sub import NAME\n",
            "pkg/e.py": "import pkg.sub.d\n",
        },
    )
    graph = import_graph(tmp_path, "pkg")
    assert graph["pkg.a"] == {"pkg.b"} and graph["pkg.b"] == {"pkg.a"}
    assert graph["pkg.c"] == {"pkg.sub.d"} and graph["pkg.sub.d"] == {"pkg.c", "pkg.sub"}
    assert graph["pkg.e"] == {"pkg.sub.d"}
    assert cycles(graph) == [["pkg.a", "pkg.b"], ["pkg.c", "pkg.sub.d"]]
