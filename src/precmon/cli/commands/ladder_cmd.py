"""`precmon ladder MODEL.gguf`: one F16/BF16 GGUF → the precision ladder and its sweep file.

The tools follow the test bed's one rule (`precmon.testbed.llama_tools`): `--quantize`/`--server`
or `$PRECMON_LLAMA_SERVER` (and the other tool beside a named one), else precmon's own llama.cpp
build for this machine (CUDA for its GPU where a compiler is found, else the CPU; `--cpu` forces
it), built the first time; the output names them. Nothing is measured here; the sweep file is
what `precmon sweep` measures, so a Spark or 4090 owner goes from F16 to NVFP4 in two commands.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from precmon.cli.output import fail
from precmon.exit_codes import ExitCode
from precmon.sweep.ladder import (
    LadderError,
    NotWideError,
    check_wide,
    make_ladder,
    rungs_from,
    split_args,
    sweep_toml,
)
from precmon.testbed.build_choice import BuildChoice, choose_build
from precmon.testbed.demo_server import build_failed
from precmon.testbed.llama_build import BuildError, LlamaBuild, build_chosen
from precmon.testbed.llama_tools import QUANTIZE, SERVER, pick_tools

SWEEP_FILE = "ladder.toml"
SLOTS_DIR = "slots"  # the servers' --slot-save-path, inside --out


def _say(msg: str) -> None:
    print(f"precmon ladder: {msg}", file=sys.stderr, flush=True)


def _build(choice: BuildChoice) -> LlamaBuild:
    """precmon's build for this machine, saying first what it is and why (a tool not named)."""
    for line in choice.lines():
        _say(line)
    return build_chosen(choice)


def run(args: argparse.Namespace) -> int:
    model = Path(args.model).expanduser()
    if not model.is_file():
        return fail(f"{model}: no such GGUF file", ExitCode.USAGE)
    out_dir = Path(args.out).expanduser() if args.out else model.parent
    try:  # before any build: a quantized input has no ladder
        check_wide(model)
    except NotWideError as exc:
        code = fail(str(exc), ExitCode.USAGE)
        for line in exc.recipe():
            _say(line)
        return code
    except LadderError as exc:
        return fail(str(exc), ExitCode.USAGE)
    choice = choose_build(force_cpu=args.cpu)
    try:
        tools = pick_tools(choice, {SERVER: args.server, QUANTIZE: args.quantize}, build=_build)
    except BuildError as exc:
        return fail(build_failed(exc, choice, "precmon ladder"), ExitCode.FAILED)
    tool, server = tools[QUANTIZE], tools[SERVER]
    if not tool.path.is_file():
        return fail(f"--quantize {tool.path}: no such file", ExitCode.USAGE)
    for t in (tool, server):
        _say(t.line())
    try:
        rungs = rungs_from(args.rungs)
        server_args = split_args(args.server_args)
        files = make_ladder(tool.path, model, out_dir, rungs, say=_say)
        slots = out_dir / SLOTS_DIR
        slots.mkdir(exist_ok=True)
        sweep = out_dir / SWEEP_FILE
        tmp = sweep.with_name(f".{sweep.name}.part")
        gpu = choice.gpu is not None and not args.cpu  # -ngl 99: a CPU build ignores it, a CUDA one needs it
        tmp.write_text(sweep_toml(files, str(server.path), args.port, server_args, slots, gpu), encoding="utf-8")
        tmp.replace(sweep)
    except LadderError as exc:
        return fail(str(exc), ExitCode.FAILED)
    except OSError as exc:
        return fail(f"cannot write into {out_dir}: {exc.strerror or exc}", ExitCode.FAILED)
    for f in files:
        made = "the baseline" if f.path == model else ("kept" if f.seconds is None else f"made in {f.seconds:.0f} s")
        print(f"{f.rung.label:8} {f.path}  ({made})")
    print(f"llama-server in the sweep file: {server.path} ({server.origin})")
    print(f"sweep file: {sweep}\nnext: precmon sweep {sweep} --quick   (a fast look; without --quick the full plan)")
    return ExitCode.OK
