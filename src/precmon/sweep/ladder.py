"""The precision ladder: from one F16/BF16 GGUF to every rung, and the sweep file that measures it
(`precmon ladder`, and the test bed's real model; docs/design.md §8 "Ladder").

llama-quantize has no preset for NVFP4 or MXFP4: a quantized base type with `--tensor-type`
overrides for the attention and FFN weights makes them (with base F16 the overrides are ignored,
silently, exit 0). The base type then names the file (`general.file_type` Q8_0), so NVFP4's own
file type (39) is written over it; MXFP4 has no file type for a dense model (only MXFP4_MOE), so
its file says Q8_0 and precmon names it by its header (measure/labels/true_label.py).
"""

from __future__ import annotations

import json
import shlex
import shutil
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from precmon.file_args import same_file
from precmon.servers.gguf_weights import GGUFError, WeightMix, read_weights
from precmon.servers.kinds import LLAMA_KV_LOG

#: What an input must be: quantizing a quantized file requantizes it (rounding twice).
WIDE_TYPES = ("F32", "F16", "BF16")


class LadderError(RuntimeError):
    """The ladder cannot be made (one line: the file, the tool, and what went wrong)."""


class LadderInputError(LadderError):
    """An input the ladder cannot take (a rung, a flag, a file in the way): exit 2, before anything
    is built or quantized."""


class NotWideError(LadderError):
    """The input is quantized already: no ladder can be made from it (`recipe` says what can)."""

    def __init__(self, message: str, path: Path, main_type: str) -> None:
        super().__init__(message)
        self.path, self.main_type = path, main_type

    def recipe(self) -> list[str]:
        """How a model that ships in one precision (gpt-oss: MXFP4 only) is measured instead:
        alone, or against another engine's or another file's variant with `precmon compare`."""
        label = self.main_type.lower()
        return [
            f"a model that ships in {self.main_type} only (gpt-oss is MXFP4 only) is measured as it is:",
            f"  alone:    llama-server -m {self.path} -ngl 99 --port 8080 &",
            f"            precmon bench --url http://127.0.0.1:8080 --json {label}.json",
            "  against another engine's or file's variant (vLLM serving the same model, another GGUF of it),",
            f"  measured the same way into other.json: precmon compare {label}.json other.json",
        ]


@dataclass(frozen=True)
class Rung:
    """One step of the ladder and how llama-quantize makes it from the wide file."""

    label: str
    precision: str
    base_type: str
    tensor_types: tuple[str, ...] = ()
    file_type: int | None = None

    def options(self) -> tuple[str, ...]:
        out: list[str] = []
        for t in self.tensor_types:
            out += ["--tensor-type", t]
        if self.file_type is not None:
            out += ["--override-kv", f"general.file_type=int:{self.file_type}"]
        return tuple(out)


F16 = Rung("F16", "fp16", "F16")
RUNGS: dict[str, Rung] = {
    r.label: r
    for r in (
        F16,
        Rung("BF16", "bf16", "BF16"),
        Rung("Q8_0", "int8", "Q8_0"),
        Rung("Q6_K", "int6", "Q6_K"),
        Rung("Q5_K_M", "int5", "Q5_K_M"),
        Rung("Q4_K_M", "int4", "Q4_K_M"),
        Rung("Q4_0", "int4", "Q4_0"),
        Rung("NVFP4", "nvfp4", "Q8_0", ("attn_.*=nvfp4", "ffn_.*=nvfp4"), 39),
        Rung("MXFP4", "mxfp4", "Q8_0", ("attn_.*=mxfp4", "ffn_.*=mxfp4")),
    )
}
#: `precmon ladder`'s default: the seed's precisions, Q4_K_M as the usual 4-bit integer file.
DEFAULT_RUNGS = ("Q8_0", "Q4_K_M", "NVFP4", "MXFP4")


def rungs_from(text: str) -> tuple[Rung, ...]:
    """`Q8_0,NVFP4` → those rungs; LadderError naming an unknown one and the known ones."""
    out: list[Rung] = []
    for name in (t.strip() for t in text.split(",") if t.strip()):
        rung = RUNGS.get(name.upper())
        if rung is None:
            raise LadderInputError(f"--rungs: unknown rung {name!r} (known: {', '.join(RUNGS)})")
        if rung in out:  # two variants of one label: a sweep file `sweep --check` rejects
            raise LadderInputError(f"--rungs: {rung.label} given twice")
        out.append(rung)
    if not out:
        raise LadderInputError("--rungs: give at least one rung, e.g. Q8_0,Q4_K_M,NVFP4")
    return tuple(out)


def check_wide(path: Path) -> str:
    """The input's main type; LadderError unless it is F32/F16/BF16 (or not a GGUF)."""
    try:
        mix = read_weights(path)
    except (GGUFError, OSError) as exc:
        raise LadderError(f"{path}: {exc}") from None
    if mix.main_type not in WIDE_TYPES:
        raise NotWideError(
            f"{path}: its weights are {mix.main_type}, not F16/BF16: quantizing it would round twice; "
            "give the F16 or BF16 GGUF (convert_hf_to_gguf.py --outtype f16)",
            path,
            mix.main_type or "unknown",
        )
    return mix.main_type


def quantize(
    tool: Path, src: Path, dst: Path, rung: Rung, extra: tuple[str, ...] = (), write: Callable | None = None
) -> Path:
    """`llama-quantize [options] src dst BASE` into `dst`, written under a temporary name first
    (`write(dst, fn)` is the atomic writer; default: tmp then rename). LadderError with the
    tool's last lines on failure."""

    def run(tmp: Path) -> None:
        argv = [str(tool), *extra, *rung.options(), str(src), str(tmp), rung.base_type]
        try:
            proc = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        except OSError as exc:
            raise LadderError(f"cannot run {tool}: {exc.strerror or exc}") from None
        if proc.returncode != 0:
            tail = " | ".join(proc.stdout.decode(errors="replace").strip().splitlines()[-3:])
            free = _free_bytes(tmp.parent)  # before the part file is removed: a full disk says so
            if free is not None and free < LOW_SPACE_BYTES:
                raise LadderError(f"no space left in {tmp.parent} ({_size(free)} free) for {rung.label}: {tail}")
            raise LadderError(f"{tool.name} {rung.label} failed (exit {proc.returncode}): {tail}")

    if write is not None:
        return write(dst, run)
    tmp = dst.with_name(f".{dst.name}.part")
    try:
        run(tmp)
        tmp.replace(dst)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return dst


#: Free space below which a failed llama-quantize is said to have met a full disk (it says only
#: "basic_ios::clear: iostream error" when its write fails).
LOW_SPACE_BYTES = 64 << 20


def _free_bytes(folder: Path) -> int | None:
    try:
        return shutil.disk_usage(folder).free
    except OSError:
        return None


def _size(n: int) -> str:
    for unit, shift in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if n >= 1 << shift:
            return f"{n / (1 << shift):.0f} {unit}"
    return f"{n} bytes"


@dataclass(frozen=True)
class LadderFile:
    """One rung made (or found) on disk."""

    rung: Rung
    path: Path
    seconds: float | None  # None: it was already there


def rung_paths(wide: Path, out_dir: Path, rungs: tuple[Rung, ...], base_type: str) -> list[tuple[Rung, Path]]:
    """Where each rung goes (`<stem>-<RUNG>.gguf` in `out_dir`); the wide file's own rung is it."""
    stem = wide.stem.removesuffix("-F16").removesuffix("-BF16").removesuffix("-f16").removesuffix("-bf16")
    return [(r, out_dir / f"{stem}-{r.label}.gguf") for r in rungs if r.label != base_type]


def _holds(mix: WeightMix, rung: Rung) -> bool:
    """Whether a GGUF's header says it is `rung` (FP4 rungs by their FP4 tensors: MXFP4 has no file type)."""
    if rung.tensor_types:
        return rung.label in mix.tensors
    return (mix.file_type or mix.main_type) == rung.label


IN_THE_WAY = "remove it, or choose another --out"


def check_existing(wide: Path, paths: list[tuple[Rung, Path]], base_type: str) -> None:
    """A file already at a rung's path is kept only when its header says it is that rung: the
    input itself (a BF16 file named `-F16`) or anything else is refused, LadderInputError."""
    for rung, dst in paths:
        if not dst.exists():
            continue
        if same_file(dst, wide):
            raise LadderInputError(
                f"--rungs {rung.label}: its file {dst} is the input itself, which holds {base_type}: "
                "give the input a name that says what it holds, or choose another --out"
            )
        try:
            mix = read_weights(dst)
        except (GGUFError, OSError) as exc:
            raise LadderInputError(f"{dst}: already there but not a GGUF ({exc}): {IN_THE_WAY}") from None
        if not _holds(mix, rung):
            held = mix.file_type or mix.main_type or "no weights"
            raise LadderInputError(f"{dst}: already there but holds {held}, not {rung.label}: {IN_THE_WAY}")


#: llama-server flags the sweep file sets for each rung, and why a user's own would break it.
SWEEP_SETS = {
    "--port": "each rung's own port",
    "--host": "127.0.0.1, where precmon measures it",
    "-m": "each rung's model file",
    "--model": "each rung's model file",
    "-mu": "each rung's model file",
    "--model-url": "each rung's model file",
    "-hf": "each rung's model file",
    "--hf-repo": "each rung's model file",
    "-hff": "each rung's model file",
    "--hf-file": "each rung's model file",
    "--models-dir": "each rung's model file",
    "-cram": "0: a host prompt cache would serve precmon's prompts from memory",
    "--cache-ram": "0: a host prompt cache would serve precmon's prompts from memory",
}


def server_args_problem(server_args: list[str]) -> str | None:
    """Why `--server-args` cannot go into every rung's launch (a flag the sweep sets), or None."""
    for a in server_args:
        flag = a.split("=", 1)[0]
        if flag in SWEEP_SETS:
            return f"--server-args: {flag} clashes with the ladder, the sweep sets it ({SWEEP_SETS[flag]})"
    return None


def ports_problem(port: int, servers: int) -> str | None:
    """Why the `servers` launched servers cannot take ports `port`, `port + 1`, …, or None."""
    last = port + servers - 1
    if port < 1 or last > 65535:
        return (
            f"--port {port}: the ladder's {servers} servers take ports {port}–{last}, past 65535 or below 1 "
            f"(choose --port 1–{65536 - servers})"
        )
    return None


def make_ladder(
    tool: Path, wide: Path, out_dir: Path, rungs: tuple[Rung, ...], say: Callable[[str], None] = lambda m: None
) -> list[LadderFile]:
    """The wide file itself as the baseline, then each rung quantized from it into `out_dir`
    (`rung_paths`; a file already there is kept when its header says it is that rung)."""
    base_type = check_wide(wide)
    out_dir.mkdir(parents=True, exist_ok=True)
    made = [LadderFile(RUNGS.get(base_type, F16), wide, None)]
    paths = rung_paths(wide, out_dir, rungs, base_type)
    check_existing(wide, paths, base_type)
    for rung, dst in paths:
        if dst.exists():
            made.append(LadderFile(rung, dst, None))
            continue
        say(f"quantizing {rung.label} → {dst}")
        started = time.monotonic()
        quantize(tool, wide, dst, rung)
        made.append(LadderFile(rung, dst, time.monotonic() - started))
    return made


#: llama-server flags that say what precmon adds (first flag of each) when the user has not: every
#: layer on the GPU; the log level at which llama-server logs its KV cache's size (`llama_kv_cache:
#: size = …`, sweep/kv_memory.py); a slot save path, without which it refuses every /slots action
#: (HTTP 501), so precmon could not empty the slots between steps (measure/depth/slots.py).
GPU_LAYERS_FLAGS = ("-ngl", "--gpu-layers", "--n-gpu-layers")
VERBOSITY_FLAGS = LLAMA_KV_LOG.verbosity_flags  # servers/kinds.py: the level its KV size is logged at
SLOT_FLAGS = ("--slot-save-path",)


def launch_flags(server_args: list[str], slot_dir: Path | None, gpu_layers: bool) -> list[str]:
    """The flags every rung's llama-server gets: `-ngl 99` (on a GPU), `-lv 4` and
    `--slot-save-path DIR` where the user's `server_args` do not set them, then the user's."""
    given = {a.split("=", 1)[0] for a in server_args}
    ours: list[str] = []
    if gpu_layers and not given & set(GPU_LAYERS_FLAGS):
        ours += [GPU_LAYERS_FLAGS[0], "99"]
    if not given & set(VERBOSITY_FLAGS):
        ours += list(LLAMA_KV_LOG.flags)
    if slot_dir is not None and not given & set(SLOT_FLAGS):
        ours += [SLOT_FLAGS[0], str(slot_dir)]
    return ours + list(server_args)


def sweep_toml(
    files: list[LadderFile],
    server: str,
    port: int,
    server_args: list[str],
    slot_dir: Path | None = None,
    gpu_layers: bool = False,
) -> str:
    """A sweep file that launches one llama-server per rung (docs/design.md §6), the wide file as
    the quality baseline, each server with `launch_flags`. Paths and arguments are written as
    TOML strings (JSON escaping is a subset of TOML's basic strings)."""
    lines = [
        "# made by `precmon ladder`: one llama-server per rung, launched and stopped by the sweep;",
        "# measure it with `precmon sweep THIS_FILE` (TUI) or `precmon sweep THIS_FILE --headless`",
        "# (`--quick` first for a fast look).",
        "[defaults]",
        "quality = true",
        f"baseline = {json.dumps(files[0].rung.label)}",
        'server = "llamacpp"',
        "",
    ]
    flags = launch_flags(server_args, slot_dir, gpu_layers)
    for i, f in enumerate(files):
        argv = [server, "-m", str(f.path), "--host", "127.0.0.1", "--port", str(port + i), "--metrics"]
        argv += ["--cache-ram", "0", *flags]
        lines += [
            "[[variant]]",
            f"label = {json.dumps(f.rung.label)}",
            f"precision = {json.dumps(f.rung.precision)}",
            "launch = [" + ", ".join(json.dumps(a) for a in argv) + "]",
            f'url = "http://127.0.0.1:{port + i}"',
            "",
        ]
    return "\n".join(lines)


def split_args(text: str) -> list[str]:
    """`--server-args "-ngl 99 -c 8192"` → its words (shell quoting rules, nothing run)."""
    try:
        return shlex.split(text)
    except ValueError as exc:
        raise LadderInputError(f"--server-args: {exc}") from None
