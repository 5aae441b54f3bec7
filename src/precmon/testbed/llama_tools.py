"""Which llama.cpp tools a command runs: one rule for `precmon demo`, `precmon ladder` and the test
bed (docs/design.md §3 "Which llama-server").

1. A tool the user names: `--server` / `--quantize` (ladder), `$PRECMON_LLAMA_SERVER` (llama-server,
   every command). A named tool's folder also gives the other tools where they are in it: one
   build's tools stay together.
2. Else precmon's own build for this machine (`build_choice.py`: CUDA for its GPU, or the CPU),
   built the first time (`llama_build.py`).

`llama-server` on PATH is never taken without being named: what it was built for is unknown (a
CPU build on a GPU box measures the wrong chip), and the same command must run the same binary on
its first and second run (before this rule, PATH's served until a cached build existed). Every
command prints the tools it runs and where they came from (`Tool.line`).
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from precmon.testbed.build_choice import BuildChoice
from precmon.testbed.llama_build import LlamaBuild, build_chosen

SERVER, QUANTIZE = "llama-server", "llama-quantize"
ENV_SERVER = "PRECMON_LLAMA_SERVER"


@dataclass(frozen=True)
class Tool:
    """One tool and how the rule found it."""

    name: str
    path: Path
    origin: str  # "--server", "$PRECMON_LLAMA_SERVER", "beside --server", "precmon's CUDA build for …"
    build: LlamaBuild | None = None  # precmon's build it belongs to

    @property
    def ours(self) -> bool:
        return self.build is not None

    def line(self) -> str:
        return f"{self.name}: {self.path} ({self.origin})"

    def problem(self) -> str | None:
        """Why this tool cannot run (`--server X: no such file`), or None."""
        if not self.path.is_absolute():
            return f"{self.origin} {self.path}: not found on PATH"
        if not self.path.is_file():
            return f"{self.origin} {self.path}: no such file"
        return None


def named(
    flags: Mapping[str, str | None], env: Mapping[str, str] | None = None, names: tuple[str, ...] = (SERVER, QUANTIZE)
) -> dict[str, Tool]:
    """The tools the user named (`flags`: tool name → the flag's value), `$PRECMON_LLAMA_SERVER`
    for the server, and the other tools found beside a named one."""
    env = os.environ if env is None else env
    out: dict[str, Tool] = {}
    for name, value in flags.items():
        if value:
            out[name] = Tool(name, _path(value), _flag(name))
    if SERVER not in out and env.get(ENV_SERVER):
        out[SERVER] = Tool(SERVER, _path(env[ENV_SERVER]), f"${ENV_SERVER}")
    for name in names:
        if name in out:
            continue
        for given in list(out.values()):
            sibling = given.path.parent / name
            if given.path.parent != Path() and sibling.is_file():
                out[name] = Tool(name, sibling, f"beside {given.origin}'s {given.name}")
                break
    return out


def _path(value: str) -> Path:
    """A named tool: a path, made absolute (what a command writes must not depend on where it ran:
    `./llama-server` would read as PATH's `llama-server`), or a bare name (`--server llama-server`)
    as PATH finds it; a bare name PATH lacks stays bare (`Tool.problem` says so)."""
    if "/" not in value:
        found = shutil.which(value)
        return Path(os.path.abspath(found)) if found else Path(value)
    return Path(os.path.abspath(Path(value).expanduser()))


def _flag(name: str) -> str:
    return {SERVER: "--server", QUANTIZE: "--quantize"}.get(name, name)


def pick_tools(
    choice: BuildChoice,
    flags: Mapping[str, str | None] | None = None,
    env: Mapping[str, str] | None = None,
    names: tuple[str, ...] = (SERVER, QUANTIZE),
    build: Callable[[BuildChoice], LlamaBuild] = build_chosen,
) -> dict[str, Tool]:
    """Every tool of `names` by the rule: named, else precmon's build for `choice` (built if it is
    not cached yet: BuildError when that fails)."""
    tools = named(flags or {}, env, names)
    if all(n in tools for n in names):
        return tools
    ours = build(choice)
    origin = f"precmon's {choice.words()} build"
    for n in names:
        tools.setdefault(n, Tool(n, ours.tool(n), origin, ours))
    return tools
