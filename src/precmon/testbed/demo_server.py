"""The llama.cpp demo's server: this machine's build of llama.cpp serving the real model's ladder.

`precmon demo` (cli/commands/demo_cmd.py) calls `start_demo_server`: the build for this machine
(`build_choice.py`: CUDA for its GPU where a compiler is found, else the CPU; `--cpu` forces the
CPU), the llama-server of the one rule (`llama_tools.py`), the ladder made with that build's
llama-quantize (`real_model.py`), and llama-server in router mode with every layer on the GPU for a
CUDA build. Each step says what it does on stderr before it does it, so a 6-minute first build is
never a silent one.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from precmon.servers.kinds import with_kv_log
from precmon.servers.launch import ServerProcess, free_port
from precmon.testbed.build_choice import CUDA, BuildChoice, choose_build
from precmon.testbed.llama_build import BuildError, build_chosen, cache_root, chosen_build
from precmon.testbed.llama_tools import SERVER, pick_tools
from precmon.testbed.real_model import LICENSE, make_ladder
from precmon.testbed.server import start_llama_server

#: The router's context: the demo's largest prompt (1,024) and its output fit with room to spare.
DEMO_CTX_TOKENS = 4096


@dataclass(frozen=True)
class DemoServer:
    """The running router, the binary it runs and the build choice behind it."""

    proc: ServerProcess
    binary: Path
    choice: BuildChoice


def build_failed(exc: BuildError, choice: BuildChoice, command: str) -> str:
    """One line for a failed build: the step, where its log is and, for CUDA, the way round it."""
    first = str(exc).splitlines()[0].rstrip(":") if str(exc) else "the build failed"
    where = f"; its log: {exc.log}" if exc.log is not None else ""
    if choice.flavour != CUDA:
        return f"{first}{where}"
    return f"the CUDA build of llama.cpp failed ({first}){where}; `{command} --cpu` runs on the CPU instead"


def start_demo_server(
    port: int = 0,
    log_dir: Path | None = None,
    force_cpu: bool = False,
    say: Callable[[str], None] = print,
    choose: Callable[[bool], BuildChoice] = choose_build,
) -> DemoServer:
    """Build (or find) this machine's llama.cpp, make the ladder, start the router; raises
    BuildError (its message already says where the log is and offers `--cpu`), ServerError,
    ModelFetchError, LadderError or OSError."""
    choice = choose(force_cpu)
    for line in choice.lines():
        say(line)
    if not chosen_build(choice).is_complete():
        minutes = "about 6 minutes on 16 cores" if choice.flavour == CUDA else "about 5 minutes on 2 cores"
        say(
            f"first run: building llama.cpp ({choice.words()}): llama-server, llama-quantize and llama-bench "
            f"from source ({minutes}; cached for next time)"
        )
    try:
        build = build_chosen(choice)
        server = pick_tools(choice, names=(SERVER,), build=lambda _: build)[SERVER]
    except BuildError as exc:
        raise BuildError(build_failed(exc, choice, "precmon demo"), exc.log) from exc
    say(server.line())
    say(f"SmolLM2-135M-Instruct ({LICENSE}), its ladder F16 (upcast of the Q4_1 release), Q8_0, Q4_0, NVFP4, MXFP4")
    models = make_ladder(build)
    port = port or free_port()
    log = (log_dir or cache_root() / "logs") / "demo-llama-server.log"
    layers = " with every layer on the GPU" if choice.server_args() else ""
    say(f"starting {server.path.name} in router mode on 127.0.0.1:{port}{layers} (log: {log})")
    proc = start_llama_server(
        server.path,
        log,
        port=port,
        models_dir=models["F16"].parent,
        ctx_tokens=DEMO_CTX_TOKENS,
        # -lv 4 reaches the router's children: their logs then name the backend and the KV cache's size
        extra=with_kv_log([str(server.path), *choice.server_args()])[1:],
    )
    return DemoServer(proc, server.path, choice)
