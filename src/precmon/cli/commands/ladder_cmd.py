"""`precmon ladder MODEL.gguf`: one F16/BF16 GGUF → the precision ladder and its sweep file.

The tools follow the test bed's one rule (`precmon.testbed.llama_tools`): `--quantize`/`--server`
or `$PRECMON_LLAMA_SERVER` (and the other tool beside a named one), else precmon's own llama.cpp
build for this machine (CUDA for its GPU where a compiler is found, else the CPU; `--cpu` forces
it), built the first time; the output names them. Nothing is measured here; the sweep file is
what `precmon sweep` measures, so a Spark or 4090 owner goes from F16 to NVFP4 in two commands.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from precmon.cli.output import fail
from precmon.exit_codes import ExitCode
from precmon.sweep.ladder import (
    LadderError,
    LadderInputError,
    NotWideError,
    Rung,
    check_existing,
    check_wide,
    make_ladder,
    ports_problem,
    rung_paths,
    rungs_from,
    server_args_problem,
    split_args,
    sweep_toml,
)
from precmon.testbed.build_choice import BuildChoice, choose_build
from precmon.testbed.demo_server import build_failed
from precmon.testbed.llama_build import BuildError, LlamaBuild, build_chosen
from precmon.testbed.llama_tools import QUANTIZE, SERVER, named, pick_tools

SWEEP_FILE = "ladder.toml"
SLOTS_DIR = "slots"  # the servers' --slot-save-path, inside --out


def _say(msg: str) -> None:
    print(f"precmon ladder: {msg}", file=sys.stderr, flush=True)


def _build(choice: BuildChoice) -> LlamaBuild:
    """precmon's build for this machine, saying first what it is and why (a tool not named)."""
    for line in choice.lines():
        _say(line)
    return build_chosen(choice)


def _inputs(args: argparse.Namespace, model: Path, out_dir: Path) -> tuple[tuple[Rung, ...], list[str]]:
    """Every input checked before anything is built or quantized: the rungs, the server args, the
    ports, the files already at the rungs' paths, the tools named (LadderInputError: exit 2)."""
    base_type = check_wide(model)  # a quantized input has no ladder
    rungs = rungs_from(args.rungs)
    server_args = split_args(args.server_args)
    paths = rung_paths(model, out_dir, rungs, base_type)
    problem = server_args_problem(server_args) or ports_problem(args.port, 1 + len(paths))
    if problem:
        raise LadderInputError(problem)
    check_existing(model, paths, base_type)
    for tool in named({QUANTIZE: args.quantize, SERVER: args.server}, names=()).values():
        if problem := tool.problem():
            raise LadderInputError(problem)
    return rungs, server_args


def run(args: argparse.Namespace) -> int:
    model = Path(os.path.abspath(Path(args.model).expanduser()))  # the sweep file holds absolute paths
    if not model.is_file():
        return fail(f"{model}: no such GGUF file", ExitCode.USAGE)
    out_dir = Path(os.path.abspath(Path(args.out).expanduser())) if args.out else model.parent
    try:
        rungs, server_args = _inputs(args, model, out_dir)
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
    if problem := tool.problem() or server.problem():  # a tool found beside a named one, or $PRECMON_LLAMA_SERVER
        return fail(problem, ExitCode.USAGE)
    for t in (tool, server):
        _say(t.line())
    try:
        files = make_ladder(tool.path, model, out_dir, rungs, say=_say)
        slots = out_dir / SLOTS_DIR
        slots.mkdir(exist_ok=True)
        sweep = out_dir / SWEEP_FILE
        tmp = sweep.with_name(f".{sweep.name}.part")
        gpu = choice.gpu is not None and not args.cpu  # -ngl 99: a CPU build ignores it, a CUDA one needs it
        tmp.write_text(sweep_toml(files, str(server.path), args.port, server_args, slots, gpu), encoding="utf-8")
        tmp.replace(sweep)
    except LadderInputError as exc:
        return fail(str(exc), ExitCode.USAGE)
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
