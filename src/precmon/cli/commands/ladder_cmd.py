"""`precmon ladder MODEL.gguf`: one F16/BF16 GGUF → the precision ladder and its sweep file.

The tools are the user's: `--quantize`/`--server`, else `llama-quantize`/`llama-server` on PATH,
else precmon's own cached build (the demo's). Nothing is measured here; the sweep file is what
`precmon sweep` measures, so a Spark or 4090 owner goes from F16 to NVFP4 in two commands.
"""

from __future__ import annotations

import argparse
import shutil
import sys
from pathlib import Path

from precmon.cli.common import ExitCode, fail
from precmon.sweep.ladder import LadderError, make_ladder, rungs_from, split_args, sweep_toml
from precmon.testbed.llama_build import build_for

SWEEP_FILE = "ladder.toml"


def find_tool(name: str, given: str | None) -> Path | None:
    """`given`, else `name` on PATH, else precmon's cached CUDA or CPU build of it."""
    if given:
        return Path(given).expanduser()
    on_path = shutil.which(name)
    if on_path:
        return Path(on_path)
    for flavour in ("cuda", "cpu"):
        build = build_for(flavour)
        if build.is_complete():
            return build.tool(name)
    return None


def _say(msg: str) -> None:
    print(f"precmon ladder: {msg}", file=sys.stderr, flush=True)


def run(args: argparse.Namespace) -> int:
    model = Path(args.model).expanduser()
    if not model.is_file():
        return fail(f"{model}: no such GGUF file", ExitCode.USAGE)
    out_dir = Path(args.out).expanduser() if args.out else model.parent
    tool, server = find_tool("llama-quantize", args.quantize), find_tool("llama-server", args.server)
    missing = [n for n, p in (("llama-quantize", tool), ("llama-server", server)) if p is None]
    if missing:
        return fail(
            f"{' and '.join(missing)} not found: give --quantize/--server, put llama.cpp's tools on PATH, "
            "or run `precmon demo` once (it builds them)",
            ExitCode.USAGE,
        )
    assert tool is not None and server is not None
    if not tool.is_file():
        return fail(f"--quantize {tool}: no such file", ExitCode.USAGE)
    try:
        rungs = rungs_from(args.rungs)
        server_args = split_args(args.server_args)
        files = make_ladder(tool, model, out_dir, rungs, say=_say)
        sweep = out_dir / SWEEP_FILE
        tmp = sweep.with_name(f".{sweep.name}.part")
        tmp.write_text(sweep_toml(files, str(server), args.port, server_args), encoding="utf-8")
        tmp.replace(sweep)
    except LadderError as exc:
        return fail(str(exc), ExitCode.FAILED)
    except OSError as exc:
        return fail(f"cannot write into {out_dir}: {exc.strerror or exc}", ExitCode.FAILED)
    for f in files:
        made = "the baseline" if f.path == model else ("kept" if f.seconds is None else f"made in {f.seconds:.0f} s")
        print(f"{f.rung.label:8} {f.path}  ({made})")
    print(f"sweep file: {sweep}\nnext: precmon sweep {sweep}   (or add --headless)")
    return ExitCode.OK
