"""`precmon demo`: the embedded default for a newcomer with no server.

Builds llama.cpp on first use for this machine (`precmon.testbed.demo_server`: CUDA for its NVIDIA
GPU where a CUDA compiler is found, else the CPU; `--cpu` forces the CPU; about 5 minutes on 2
cores), fetches a real model once (SmolLM2-135M-Instruct, Apache-2.0, checked by its sha256:
`precmon.testbed.real_model`), makes its precision ladder with llama-quantize (F16, Q8_0, Q4_0,
NVFP4, MXFP4), serves it in llama-server's router mode and sweeps it in the TUI with quality scored
against the F16 and each variant's answer to one question. Nothing here is simulated: every number
is measured, every answer is the model's.
`--engine vllm` sweeps the same model on vLLM's CPU build instead (`demo_vllm.py`).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from precmon.api import default_sweep_dir
from precmon.cli.commands import demo_vllm, tui_cmd
from precmon.cli.commands.sweep_cmd import run_headless
from precmon.cli.output import fail
from precmon.core.settings import BenchSettings, report_values
from precmon.exit_codes import ExitCode
from precmon.measure.quality.settings import QualitySettings
from precmon.measure.quality.windows import per_window
from precmon.report.analysis.roofline import launch_bound_line
from precmon.report.load import load_document
from precmon.servers.base import ServerError
from precmon.servers.kinds import DEMO_ENGINES
from precmon.sweep import folder_lock
from precmon.sweep.auto import spec_from_server
from precmon.sweep.ladder import LadderError
from precmon.sweep.launched import earlier_sweep
from precmon.testbed.demo_server import DemoServer, start_demo_server
from precmon.testbed.llama_build import BuildError
from precmon.testbed.real_model import ModelFetchError

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
#: Quality on one llama-perplexity window of the built-in text (255 positions): enough for its
#: error bars, a few seconds each.
DEMO_QUALITY = QualitySettings(positions=per_window())
#: `--engine` (the kinds whose records have a demo, servers/kinds.py): llama.cpp's demo is this
#: module's, vLLM's is demo_vllm's; a third kind with a demo fails here until it has a runner.
LLAMA_ENGINE, VLLM_ENGINE = DEMO_ENGINES


def _say(msg: str) -> None:
    print(f"precmon demo: {msg}", file=sys.stderr, flush=True)


def prepare(port: int = 0, log_dir: Path | None = None, force_cpu: bool = False) -> DemoServer:
    """This machine's llama.cpp build (CUDA for its GPU, or the CPU), the model's ladder, the router
    (`precmon.testbed.demo_server`); its `proc.log_path` is read for the compute path."""
    return start_demo_server(port, log_dir, force_cpu, say=_say)


def demo_spec(url: str, log_path: Path | None, binary: Path | None = None):
    """The router's ladder, widest first (F16, the baseline), each variant scoring quality and
    giving its answer; the router's log names the backend for every variant, the build record
    beside its binary how that was built."""
    spec = spec_from_server(url, kind=LLAMA_ENGINE, settings=DEMO_SETTINGS, cooldown_s=5.0)
    spec.quality = DEMO_QUALITY
    for v in spec.variants:
        v.quality = spec.quality
        v.server_log = log_path
        v.server_binary = binary
    return spec


def say_launch_bound(out_dir: Path) -> None:
    """On a GPU, the small model's decode is launch-bound: say so under the results, from the
    roofline share, instead of leaving "NVFP4 is no faster" unexplained."""
    try:
        line = launch_bound_line(load_document(out_dir / "results.json"))
    except Exception:  # noqa: BLE001 - the results are saved; a line that cannot be made is left out
        return
    if line:
        _say(line)


def _out_taken(out_dir: Path) -> str | None:
    """Why the demo's results folder cannot take a fresh sweep: another live precmon writes it,
    or an earlier sweep's results are there (the demo always measures from the start; the servers
    a killed earlier run left are stopped first, `earlier_sweep`)."""
    if busy := folder_lock.holder(out_dir):
        return f"--out {busy}"
    if earlier := earlier_sweep(out_dir, _say):
        return f"--out {out_dir}: {earlier}: the demo measures from the start, so choose another --out"
    return None


def run(args: argparse.Namespace) -> int:
    code = tui_cmd.out_problem_exit(args.out)  # now, not after a 5-minute build
    if code is not None:
        return code
    out_dir = Path(args.out) if args.out else default_sweep_dir()
    if problem := _out_taken(out_dir):  # before the build, the server or the vLLM demo's sweep file
        return fail(problem, ExitCode.USAGE)
    if args.engine == VLLM_ENGINE:
        return demo_vllm.run(args, out_dir)
    if args.eager:
        return fail("--eager is for --engine vllm (llama.cpp compiles nothing at start)", ExitCode.USAGE)
    try:
        demo = prepare(args.port, force_cpu=args.cpu)
    except (BuildError, ServerError, ModelFetchError, LadderError) as exc:
        return fail(f"demo could not start its server: {exc}", ExitCode.FAILED)
    except OSError as exc:  # the cache: a full disk, a read-only home, no permission (docs/design.md §3, §9)
        where = f"{exc.filename}: " if exc.filename else ""
        return fail(f"demo could not start its server: {where}{exc.strerror or exc}", ExitCode.FAILED)
    proc = demo.proc
    try:
        spec = demo_spec(proc.url, proc.log_path, demo.binary)
        spec.report |= report_values(vars(args))  # --max-kld: the pick's budget, kept in the results
        if args.headless:
            code = run_headless(spec, out_dir)
        else:
            code = tui_cmd.run_demo_app(proc.url, spec, out_dir)
        say_launch_bound(out_dir)
        return code
    except ServerError as exc:
        return fail(str(exc), ExitCode.FAILED)
    finally:
        proc.stop()
