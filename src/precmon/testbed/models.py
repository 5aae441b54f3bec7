"""Synthetic Llama GGUF models: random weights, a real tokenizer, real speed.

The text they generate is gibberish; the arithmetic per token is exactly that of a Llama of the
same shape, so decode and prefill speed, memory and power are real. The tokenizer keys are
copied from llama.cpp's tokenizer-only `ggml-vocab-llama-spm.gguf` (32,000 tokens).
F16 is written directly; Q8_0 and Q4_K_M come from `llama-quantize`.
"""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from precmon.testbed.build_choice import choose_build
from precmon.testbed.cachefs import atomic_file, cache_lock
from precmon.testbed.llama_build import BuildError, LlamaBuild, build_chosen, cache_root

QUANTS = ("Q8_0", "Q4_K_M")


@dataclass(frozen=True)
class LlamaShape:
    name: str
    n_embd: int
    n_layer: int
    n_head: int
    n_head_kv: int
    n_ff: int
    n_ctx: int = 32768
    n_vocab: int = 32000

    @property
    def n_params(self) -> int:
        e, f, v = self.n_embd, self.n_ff, self.n_vocab
        kv = e * self.n_head_kv // self.n_head
        per_layer = e * e * 2 + e * kv * 2 + 3 * e * f + 2 * e
        return 2 * v * e + self.n_layer * per_layer + e


SHAPES = {
    # ~60 M parameters: the CPU test bed (precmon demo, CI, the integration tests)
    "tiny": LlamaShape("tiny", n_embd=512, n_layer=8, n_head=8, n_head_kv=8, n_ff=1536),
    # ~8 B parameters, Llama-3-8B-like proportions (with the 32 k SPM vocabulary): the GPU proof
    "8b": LlamaShape("8b", n_embd=4096, n_layer=32, n_head=32, n_head_kv=8, n_ff=14336),
}


def _say(msg: str) -> None:
    print(f"[precmon testbed] {msg}", file=sys.stderr, flush=True)


def _import_gguf(build: LlamaBuild):
    try:
        import gguf
    except ImportError:  # the llama.cpp source carries the same package
        sys.path.insert(0, str(build.source_dir / "gguf-py"))
        import gguf
    return gguf


def write_f16(shape: LlamaShape, out: Path, build: LlamaBuild, seed: int = 0) -> Path:
    """Write a random-weight F16 Llama of `shape` to `out`."""
    gguf = _import_gguf(build)
    started = time.monotonic()
    vocab = gguf.GGUFReader(str(build.vocab_model))
    rand = _random_slices(shape, seed)
    w = gguf.GGUFWriter(None, "llama")
    _add_metadata(w, shape, vocab)
    _add_tensors(w, shape, rand)

    def write(tmp: Path) -> None:
        w.write_header_to_file(path=tmp)
        w.write_kv_data_to_file()
        w.write_tensors_to_file()
        w.close()

    atomic_file(out, write)
    _say(
        f"wrote {out.name} ({out.stat().st_size / 2**20:.0f} MiB, {shape.n_params / 1e6:.0f} M params) "
        f"in {time.monotonic() - started:.0f} s"
    )
    return out


def _random_slices(shape: LlamaShape, seed: int) -> Callable[[int, int], Any]:
    """A maker of random F16 (rows, cols) weights for `shape`, sliced from one pool of random values
    at different offsets: tensors need not be independent for speed to be real, and an 8 B model is
    written at disk speed instead of RNG speed."""
    import numpy as np

    e, ff, v = shape.n_embd, shape.n_ff, shape.n_vocab
    rng = np.random.default_rng(seed)
    pool_n = min(max(e * ff, v * e) + (1 << 20), 1 << 28)
    pool = (rng.standard_normal(pool_n, dtype=np.float32) * 0.02).astype(np.float16)
    offset = [0]

    def rand(rows: int, cols: int) -> Any:
        n = rows * cols
        if n > pool.size:
            return np.resize(pool, n).reshape(rows, cols)
        start = offset[0] % (pool.size - n + 1)
        offset[0] += 7919 * 64 + 1
        return pool[start : start + n].reshape(rows, cols)

    return rand


def _add_metadata(w: Any, shape: LlamaShape, vocab: Any) -> None:
    """The Llama hyperparameters of `shape`, and the tokenizer keys copied from `vocab`."""
    e = shape.n_embd
    w.add_name(f"precmon-synthetic-{shape.name}")
    w.add_context_length(shape.n_ctx)
    w.add_embedding_length(e)
    w.add_block_count(shape.n_layer)
    w.add_feed_forward_length(shape.n_ff)
    w.add_head_count(shape.n_head)
    w.add_head_count_kv(shape.n_head_kv)
    w.add_rope_dimension_count(e // shape.n_head)
    w.add_layer_norm_rms_eps(1e-5)
    w.add_vocab_size(shape.n_vocab)
    w.add_file_type(1)  # MOSTLY_F16
    for key, field in vocab.fields.items():
        if key.startswith("tokenizer."):
            types = field.types
            w.add_key_value(key, field.contents(), types[0], types[-1] if len(types) > 1 else None)


def _add_tensors(w: Any, shape: LlamaShape, rand: Callable[[int, int], Any]) -> None:
    """Every tensor of a Llama of `shape`, in llama.cpp's names: norms of ones, random weights."""
    import numpy as np

    e, ff, v = shape.n_embd, shape.n_ff, shape.n_vocab
    kv = e * shape.n_head_kv // shape.n_head
    ones = np.ones(e, dtype=np.float32)
    w.add_tensor("token_embd.weight", rand(v, e))
    for i in range(shape.n_layer):
        p = f"blk.{i}."
        w.add_tensor(p + "attn_norm.weight", ones)
        w.add_tensor(p + "attn_q.weight", rand(e, e))
        w.add_tensor(p + "attn_k.weight", rand(kv, e))
        w.add_tensor(p + "attn_v.weight", rand(kv, e))
        w.add_tensor(p + "attn_output.weight", rand(e, e))
        w.add_tensor(p + "ffn_norm.weight", ones)
        w.add_tensor(p + "ffn_gate.weight", rand(ff, e))
        w.add_tensor(p + "ffn_up.weight", rand(ff, e))
        w.add_tensor(p + "ffn_down.weight", rand(e, ff))
    w.add_tensor("output_norm.weight", ones)
    w.add_tensor("output.weight", rand(v, e))


def quantize(build: LlamaBuild, src: Path, dst: Path, qtype: str, options: tuple[str, ...] = ()) -> Path:
    """`llama-quantize [options] src dst qtype`, written atomically (`options`: e.g. --tensor-type)."""
    started = time.monotonic()

    def write(tmp: Path) -> None:
        proc = subprocess.run(
            [str(build.tool("llama-quantize")), *options, str(src), str(tmp), qtype],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
        )
        if proc.returncode != 0:
            raise BuildError(
                f"quantize {qtype} failed (exit {proc.returncode}):\n" + proc.stdout.decode(errors="replace")[-2000:]
            )

    atomic_file(dst, write)
    _say(f"quantized {dst.name} ({dst.stat().st_size / 2**20:.0f} MiB) in {time.monotonic() - started:.0f} s")
    return dst


def models_dir(shape_name: str = "tiny") -> Path:
    return cache_root() / "models" / shape_name


def make_models(
    shape_name: str = "tiny",
    out_dir: Path | None = None,
    build: LlamaBuild | None = None,
    quants: tuple[str, ...] = QUANTS,
) -> dict[str, Path]:
    """F16 + quantized GGUFs of a synthetic Llama, written once into `out_dir` (idempotent).

    Returns {label: path} with labels "F16", "Q8_0", "Q4_K_M". File names are
    `<shape>-<label>.gguf`, which is also the model name llama-server's router mode serves.
    """
    shape = SHAPES[shape_name]
    build = build or build_chosen(choose_build())
    out_dir = Path(out_dir) if out_dir else models_dir(shape_name)
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = {"F16": out_dir / f"{shape.name}-F16.gguf"}
    # One writer per file (another precmon may be writing the same one): the lock, then a re-check.
    if not paths["F16"].exists():
        with cache_lock(paths["F16"].with_name(f".{paths['F16'].name}.lock")):
            if not paths["F16"].exists():
                _say(f"writing synthetic {shape.name} Llama (random weights) to {paths['F16']}")
                write_f16(shape, paths["F16"], build)
    for q in quants:
        paths[q] = out_dir / f"{shape.name}-{q}.gguf"
        if not paths[q].exists():
            with cache_lock(paths[q].with_name(f".{paths[q].name}.lock")):
                if not paths[q].exists():
                    quantize(build, paths["F16"], paths[q], q)
    return paths


#: Coarser quantizations for quality tests only (docs/design.md §4 "Quality": KL must rise as bits
#: fall). Kept out of `models_dir()`, which a router-mode llama-server serves whole: the demo and
#: the auto sweeps (one variant per listed model) stay at F16 / Q8_0 / Q4_K_M.
COARSE_QUANTS = ("Q2_K",)


def coarse_dir(shape_name: str = "tiny") -> Path:
    return cache_root() / "models" / f"{shape_name}-coarse"


def make_coarse_models(
    shape_name: str = "tiny", build: LlamaBuild | None = None, quants: tuple[str, ...] = COARSE_QUANTS
) -> dict[str, Path]:
    """{label: path} of the coarse quantizations (made from the F16 once, a few seconds each for
    the tiny shape), in `coarse_dir`, not beside the models a router serves."""
    build = build or build_chosen(choose_build())
    f16 = make_models(shape_name, build=build)["F16"]
    out_dir = coarse_dir(shape_name)
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = {}
    for q in quants:
        paths[q] = out_dir / f"{SHAPES[shape_name].name}-{q}.gguf"
        if not paths[q].exists():
            with cache_lock(paths[q].with_name(f".{paths[q].name}.lock")):
                if not paths[q].exists():
                    quantize(build, f16, paths[q], q)
    return paths


def main(argv: list[str] | None = None) -> int:
    import argparse

    p = argparse.ArgumentParser(
        description="Write synthetic Llama GGUF models (F16, Q8_0, Q4_K_M); skips files that exist."
    )
    p.add_argument("--shape", choices=sorted(SHAPES), default="tiny")
    p.add_argument("--out", type=Path, default=None, help="directory (default: the precmon cache)")
    p.add_argument(
        "--cpu", action="store_true", help="quantize with the CPU build (default: this machine's, CUDA on a GPU)"
    )
    a = p.parse_args(argv)
    try:
        paths = make_models(a.shape, a.out, build_chosen(choose_build(force_cpu=a.cpu)))
    except BuildError as exc:
        print(f"precmon testbed: {exc}", file=sys.stderr)
        return 1
    for label, path in paths.items():
        print(f"{label}\t{path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
