"""`precmon demo`: the embedded default for a newcomer with no server.

Builds llama.cpp's server on first use (from PRECMON_LLAMA_SERVER, the cache, or PATH — else it
compiles it, about 5 minutes on 2 cores), fetches a real model once (SmolLM2-135M-Instruct,
Apache-2.0, checked by its sha256: `precmon.testbed.real_model`), makes its precision ladder with
llama-quantize (F16, Q8_0, Q4_0, NVFP4, MXFP4), serves it in llama-server's router mode and
sweeps it in the TUI with quality scored against the F16 and each variant's answer to one
question. Nothing here is simulated: every number is measured, every answer is the model's.
`--engine vllm` sweeps the same model on vLLM's CPU build instead (`demo_vllm.py`).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from precmon.api import default_sweep_dir
from precmon.cli.commands import demo_vllm, tui_cmd
from precmon.cli.commands.sweep_cmd import run_headless
from precmon.cli.common import ExitCode, fail
from precmon.core.settings import BenchSettings, report_values
from precmon.measure.quality.run import QualitySettings
from precmon.servers.base import ServerError
from precmon.servers.launch import free_port
from precmon.sweep.auto import spec_from_server
from precmon.sweep.ladder import LadderError
from precmon.testbed.llama_build import BuildError, build_for, build_llama, cache_root, find_llama_server
from precmon.testbed.real_model import LICENSE, ModelFetchError, make_ladder
from precmon.testbed.server import start_llama_server

#: Five variants of a 135 M model on 2 cores in a few minutes: 3 repeats of each phase, sizes a
#: small model answers in seconds (a 2,048-token prefill of SmolLM2 F16 takes ~10 s there).
DEMO_SETTINGS = BenchSettings(
    output_tokens=64,
    decode_prompt_tokens=64,
    prefill_tokens=[256, 1024],
    ttft_tokens=1024,
    repeats=3,
    warmup=1,
    idle_s=2.0,
    timeout_s=120.0,
)
#: Quality on 256 positions of the built-in text: enough for its error bars, a few seconds each.
DEMO_QUALITY = QualitySettings(positions=256)


def _say(msg: str) -> None:
    print(f"precmon demo: {msg}", file=sys.stderr, flush=True)


def prepare(port: int = 0, log_dir: Path | None = None):
    """Build (or find) llama-server, fetch the model and make its ladder, start the router.
    Returns the process (its `log_path` is read for the compute path)."""
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
    _say(f"SmolLM2-135M-Instruct ({LICENSE}), its ladder F16 (upcast of the Q4_1 release), Q8_0, Q4_0, NVFP4, MXFP4")
    models = make_ladder(build)
    port = port or free_port()
    log = (log_dir or cache_root() / "logs") / "demo-llama-server.log"
    _say(f"starting {binary.name} in router mode on 127.0.0.1:{port} (log: {log})")
    return start_llama_server(binary, log, port=port, models_dir=models["F16"].parent, ctx_tokens=4096)


def demo_spec(url: str, log_path: Path | None):
    """The router's ladder, widest first (F16, the baseline), each variant scoring quality and
    giving its answer; the router's log names the backend for every variant."""
    spec = spec_from_server(url, kind="llamacpp", settings=DEMO_SETTINGS, cooldown_s=5.0)
    spec.quality = DEMO_QUALITY
    for v in spec.variants:
        v.quality = spec.quality
        v.server_log = log_path
    return spec


def run(args: argparse.Namespace) -> int:
    code = tui_cmd.out_problem_exit(args.out)  # now, not after a 5-minute build
    if code is not None:
        return code
    if args.engine == "vllm":
        return demo_vllm.run(args, Path(args.out) if args.out else default_sweep_dir())
    if args.eager:
        return fail("--eager is for --engine vllm (llama.cpp compiles nothing at start)", ExitCode.USAGE)
    try:
        proc = prepare(args.port)
    except (BuildError, ServerError, ModelFetchError, LadderError) as exc:
        return fail(f"demo could not start its server: {exc}", ExitCode.FAILED)
    except OSError as exc:  # the cache: a full disk, a read-only home, no permission (docs/design.md §3, §9)
        where = f"{exc.filename}: " if exc.filename else ""
        return fail(f"demo could not start its server: {where}{exc.strerror or exc}", ExitCode.FAILED)
    try:
        spec = demo_spec(proc.url, proc.log_path)
        spec.report |= report_values(vars(args))  # --max-kld: the pick's budget, kept in the results
        out_dir = Path(args.out) if args.out else default_sweep_dir()
        if args.headless:
            return run_headless(spec, out_dir)
        return tui_cmd.run_demo_app(proc.url, spec, out_dir)
    except ServerError as exc:
        return fail(str(exc), ExitCode.FAILED)
    finally:
        proc.stop()
