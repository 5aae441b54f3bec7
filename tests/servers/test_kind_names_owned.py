"""No module outside precmon.servers decides by a server kind's name (issue 35): what a kind can
do is its record's (`servers/kinds.py`: `capabilities(kind).quality`, `.log_reader`,
`.live_rate`, `.gauges`, `.prefix_block_tokens(...)`, `.metrics_by_model`, `DEMO_ENGINES`), and
what it is called in a table is `core/server_names.py`'s, so adding a kind or an ability touches
those two places, never a `kind == "vllm"` elsewhere.

A string constant equal to a kind's name counts where it is

- compared: `srv.kind != "openai"`, `kind in ("llamacpp", "vllm")`, `args.engine == "vllm"`;
- a key: `{"llamacpp": ...}`, `TABLE["vllm"]`, `TABLE.get("ollama")`;
- one of a hand-written list of kinds: `choices=("llamacpp", "vllm")`, `LIVE = ("vllm", "sglang")`;
- a `match` case: `case "tgi":`;
- given to a kind: a `kind=` (or `server=`, `engine=`) keyword, or such a parameter's default.

The word in prose, a help text or a file name is not a kind use (`"--engine vllm for vLLM"`,
`"vllm:num_requests_running"`).
"""

from __future__ import annotations

import ast
from pathlib import Path

from precmon.core.server_names import DISPLAY_NAMES
from precmon.servers.kinds import KIND_NAMES

SRC = Path(__file__).resolve().parents[2] / "src" / "precmon"
NAMES = frozenset(KIND_NAMES)
#: The kinds' own package, and the one core table that names them (what the report may import).
OWNERS = ("precmon.servers", "precmon.core.server_names")
_KEYED = ("get", "pop", "setdefault")


def _says_kind(name: str | None) -> bool:
    """A keyword or parameter that takes a server kind: `kind`, `server_kind`, `server`, `engine`."""
    return bool(name) and (name == "server" or name == "engine" or "kind" in name.lower())


def _kind_names(node: ast.AST | None) -> list[ast.Constant]:
    """The kind-name constants `node` is (a string) or holds as a literal (tuple, list, set, dict keys)."""
    if isinstance(node, ast.Constant):
        return [node] if isinstance(node.value, str) and node.value in NAMES else []
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return [c for e in node.elts for c in _kind_names(e)]
    if isinstance(node, ast.Dict):
        return [c for k in node.keys for c in _kind_names(k)]
    return []


def kind_literals(tree: ast.Module) -> list[ast.Constant]:
    """The kind-name constants of `tree` used as kinds (see the module's docstring)."""
    found: list[ast.Constant] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare):
            found += [c for side in (node.left, *node.comparators) for c in _kind_names(side)]
        elif isinstance(node, (ast.Dict, ast.Tuple, ast.List, ast.Set)):
            found += _kind_names(node)
        elif isinstance(node, ast.Subscript):
            found += _kind_names(node.slice) if isinstance(node.slice, ast.Constant) else []
        elif isinstance(node, ast.Call):
            f = node.func
            if isinstance(f, ast.Attribute) and f.attr in _KEYED and node.args:
                found += _kind_names(node.args[0]) if isinstance(node.args[0], ast.Constant) else []
            found += [c for kw in node.keywords if _says_kind(kw.arg) for c in _kind_names(kw.value)]
        elif isinstance(node, ast.MatchValue):
            found += _kind_names(node.value)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            a = node.args
            positional = a.posonlyargs + a.args
            pairs = list(zip(positional[len(positional) - len(a.defaults) :], a.defaults, strict=True))
            pairs += [(arg, d) for arg, d in zip(a.kwonlyargs, a.kw_defaults, strict=True) if d is not None]
            found += [c for arg, d in pairs if _says_kind(arg.arg) for c in _kind_names(d)]
    return sorted(set(found), key=lambda c: (c.lineno, c.col_offset))


def offenders(src: Path = SRC) -> list[str]:
    """`file:line 'name'` of every kind name used as a kind outside its owners, under `src`."""
    hits = []
    for path in sorted(src.rglob("*.py")):
        module = ".".join(path.relative_to(src.parent).with_suffix("").parts).removesuffix(".__init__")
        if any(module == o or module.startswith(o + ".") for o in OWNERS):
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        rel = path.relative_to(src.parent)
        hits += [f"{rel}:{c.lineno} {c.value!r}" for c in kind_literals(tree)]
    return hits


def test_the_scan_finds_each_kind_of_kind_use():
    """The scan can fail: each shape of a kind use is caught, and the word used otherwise is not."""
    source = """
a = srv.kind != "openai"
b = kind in ("llamacpp", "vllm")
c = {"ollama": "why not"}
d = TABLE["sglang"]
e = TABLE.get("lmstudio", "")
f = p.add_argument("--engine", choices=("llamacpp", "vllm"), default="llamacpp")
g = spec_from_server(url, kind="tgi")
def h(url, kind="vllm"): ...
match k:
    case "openai":
        pass
# not kinds: prose, a help text, a metric name, a module path, another word
i = "--engine vllm for vLLM"
j = t.value("vllm:num_requests_running")
k = ("python", "-m", "vllm.entrypoints.openai.api_server")
l = say("llamacpp (default)  llama.cpp's llama-server")
m = x == "auto"
"""
    got = [(c.lineno, c.value) for c in kind_literals(ast.parse(source))]
    assert got == [
        (2, "openai"),
        (3, "llamacpp"),
        (3, "vllm"),
        (4, "ollama"),
        (5, "sglang"),
        (6, "lmstudio"),
        (7, "llamacpp"),
        (7, "vllm"),
        (8, "tgi"),
        (9, "vllm"),
        (11, "openai"),
    ]


def test_no_module_outside_servers_decides_by_a_kind_name():
    found = offenders()
    assert not found, (
        "server kind names compared or used as keys outside precmon.servers "
        "(ask precmon.servers.kinds.capabilities(kind)):\n" + "\n".join(found)
    )


def test_every_kind_has_one_display_name():
    """The report's names for the kinds (core) are exactly the kinds (servers), no more, no fewer."""
    assert set(DISPLAY_NAMES) == NAMES
