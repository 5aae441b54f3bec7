"""`precmon demo`: the embedded default for a newcomer with no server.

Builds llama.cpp's server on first use (from PRECMON_LLAMA_SERVER, the cache, or PATH — else it
compiles it, about 5 minutes on 2 cores), writes synthetic F16/Q8_0/Q4_K_M Llama models
(random weights: the text is gibberish, the speed is real), serves them in llama-server's router
mode and sweeps them in the TUI. Nothing here is simulated: every number is measured.
`--engine vllm` runs the same kind of sweep on vLLM's CPU build instead (`demo_vllm.py`).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from precmon.cli import demo_vllm, tui_cmd
from precmon.cli.common import ExitCode, fail
from precmon.cli.sweep_cmd import default_out_dir, run_headless
from precmon.core.settings import BenchSettings
from precmon.servers.base import ServerError
from precmon.servers.launch import free_port
from precmon.sweep.auto import spec_from_server
from precmon.testbed.llama_build import BuildError, build_for, build_llama, cache_root, find_llama_server
from precmon.testbed.models import make_models
from precmon.testbed.server import start_llama_server

DEMO_SETTINGS = BenchSettings(
    output_tokens=128,
    decode_prompt_tokens=128,
    prefill_tokens=[512, 1024, 2048],
    ttft_tokens=2048,
    repeats=3,
    warmup=1,
    idle_s=2.0,
    timeout_s=120.0,
)


def _say(msg: str) -> None:
    print(f"precmon demo: {msg}", file=sys.stderr, flush=True)


def prepare(port: int = 0, log_dir: Path | None = None):
    """Build (or find) llama-server, write the models, start the router. Returns the process."""
    binary = find_llama_server()
    build = build_for("cpu")
    if not build.is_complete():
        _say(
            "first run: building llama.cpp's llama-server, llama-quantize and llama-bench from source "
            "(about 5 minutes on 2 cores; cached for next time)"
        )
        build = build_llama("cpu")
    if binary is None:
        binary = build.tool("llama-server")
    _say("synthetic Llama models (60 M params, random weights — gibberish text, real speed): F16, Q8_0, Q4_K_M")
    models = make_models("tiny", build=build)
    port = port or free_port()
    log = (log_dir or cache_root() / "logs") / "demo-llama-server.log"
    _say(f"starting {binary.name} in router mode on 127.0.0.1:{port} (log: {log})")
    return start_llama_server(binary, log, port=port, models_dir=models["F16"].parent, ctx_tokens=4096)


def run(args: argparse.Namespace) -> int:
    code = tui_cmd.out_problem_exit(args.out)  # now, not after a 5-minute build
    if code is not None:
        return code
    if args.engine == "vllm":
        return demo_vllm.run(args, Path(args.out) if args.out else default_out_dir())
    if args.eager:
        return fail("--eager is for --engine vllm (llama.cpp compiles nothing at start)", ExitCode.USAGE)
    try:
        proc = prepare(args.port)
    except (BuildError, ServerError) as exc:
        return fail(f"demo could not start its server: {exc}", ExitCode.FAILED)
    try:
        spec = spec_from_server(proc.url, kind="llamacpp", settings=DEMO_SETTINGS, cooldown_s=5.0)
        out_dir = Path(args.out) if args.out else default_out_dir()
        if args.headless:
            return run_headless(spec, out_dir)
        return tui_cmd.run_demo_app(proc.url, spec, out_dir)
    except ServerError as exc:
        return fail(str(exc), ExitCode.FAILED)
    finally:
        proc.stop()
