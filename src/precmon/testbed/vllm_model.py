"""The tiny Hugging Face Llama that the vLLM test bed serves, in four precisions, cached.

`vllm_model_writer.py` does the writing under the vLLM venv's Python (precmon's environment has
no torch); this module finds its inputs, runs it, and caches the result under
`~/.cache/precmon/vllm-models/tiny-r<rev>/<variant>/` with the same discipline as the venv: a
lock, a temporary directory unique to the process, a marker written last, one rename.

The tokenizer is llama.cpp's tokenizer-only `ggml-vocab-llama-spm.gguf` (the one the GGUF test
models use), taken from the cached llama.cpp source, or from the llama-cpp-python sdist when no
llama.cpp build is cached.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tarfile
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

from precmon.testbed.llama_build import LLAMA_CPP_PYTHON_VERSION, BuildError, build_for, cache_root, fetch_sdist
from precmon.testbed.vllm_env import VllmEnv, VllmEnvError, cache_lock, install_vllm, remove_stale_temps

MODEL_REV = "1"  # bump when the writer changes, so cached models are rewritten
MARKER = "PRECMON_MODELS_OK"
WRITER = Path(__file__).with_name("vllm_model_writer.py")
VOCAB_NAME = "ggml-vocab-llama-spm.gguf"
WRITE_TIMEOUT_S = 900.0


@dataclass(frozen=True)
class VllmVariant:
    """One precision variant: its folder name and the --dtype that serves it as such.

    A quantized variant needs no --quantization flag: vLLM reads the method from config.json.
    """

    name: str
    dtype: str  # vLLM's --dtype

    @property
    def served_name(self) -> str:
        return f"tiny-{self.name}"


VARIANTS = {
    v.name: v
    for v in (
        VllmVariant("bf16", "bfloat16"),
        VllmVariant("fp16", "float16"),
        VllmVariant("w8a8-int8", "bfloat16"),  # compressed-tensors: bf16 activations around int8 GEMMs
        VllmVariant("awq-int4", "float16"),  # AWQ's scales are fp16
    )
}


def models_root() -> Path:
    return cache_root() / "vllm-models" / f"tiny-r{MODEL_REV}"


def is_complete(root: Path | None = None) -> bool:
    root = root or models_root()
    return (root / MARKER).is_file() and all((root / v / "model.safetensors").is_file() for v in VARIANTS)


def _say(msg: str) -> None:
    print(f"[precmon testbed] {msg}", file=sys.stderr, flush=True)


def find_vocab() -> Path:
    """llama.cpp's SPM vocab: from a cached llama.cpp source tree, else extracted from the sdist."""
    for flavour in ("cpu", "cuda"):
        p = build_for(flavour).vocab_model
        if p.is_file():
            return p
    out = cache_root() / "dl" / VOCAB_NAME
    if out.is_file():
        return out
    member = f"llama_cpp_python-{LLAMA_CPP_PYTHON_VERSION}/vendor/llama.cpp/models/{VOCAB_NAME}"
    with tarfile.open(fetch_sdist()) as tar:
        try:
            src = tar.extractfile(member)
        except KeyError:
            src = None
        if src is None:
            raise BuildError(f"{member} not in the llama-cpp-python sdist")
        tmp = out.with_name(f"{out.name}.{uuid.uuid4().hex[:8]}.partial")
        tmp.write_bytes(src.read())
    tmp.rename(out)
    return out


def make_vllm_models(env: VllmEnv | None = None, force: bool = False) -> dict[str, Path]:
    """Write (or find cached) every variant; returns {variant name: model folder}."""
    root = models_root()
    if not is_complete(root) or force:
        env = env or install_vllm()
        with cache_lock(f"vllm-models-{root.name}"):
            if not is_complete(root) or force:
                _write(env, root)
    return {name: root / name for name in VARIANTS}


def _write(env: VllmEnv, root: Path) -> None:
    vocab = find_vocab()
    root.parent.mkdir(parents=True, exist_ok=True)
    remove_stale_temps(root.parent, root.name)
    tmp = root.with_name(f".{root.name}.tmp-{uuid.uuid4().hex[:8]}")
    argv = [str(env.python), str(WRITER), "--out", str(tmp), "--vocab", str(vocab), "--variants", ",".join(VARIANTS)]
    _say(f"writing the tiny HF Llama ({', '.join(VARIANTS)}) with the vLLM venv's transformers (about 30 s)")
    started = time.monotonic()
    try:
        proc = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=WRITE_TIMEOUT_S)
        out = proc.stdout.decode(errors="replace")
        sys.stderr.write(out)
        if proc.returncode != 0:
            last = out.strip().splitlines()[-1] if out.strip() else "no output"
            raise VllmEnvError(f"writing the vLLM test models failed (exit {proc.returncode}): {last}")
        (tmp / MARKER).write_text(f"tiny r{MODEL_REV}: {', '.join(VARIANTS)}\n")
        if root.exists():
            shutil.rmtree(root)
        tmp.rename(root)
    except subprocess.TimeoutExpired as exc:
        raise VllmEnvError(f"writing the vLLM test models took over {WRITE_TIMEOUT_S:.0f} s") from exc
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    _say(f"vLLM test models ready in {time.monotonic() - started:.0f} s: {root}")


def main(argv: list[str] | None = None) -> int:
    import argparse

    p = argparse.ArgumentParser(
        description="Write the vLLM test bed's tiny HF Llama: bf16, fp16, W8A8 int8, AWQ int4 (skipped when cached)."
    )
    p.add_argument("--force", action="store_true", help="rewrite even when cached")
    a = p.parse_args(argv)
    try:
        paths = make_vllm_models(force=a.force)
    except (VllmEnvError, BuildError) as exc:
        print(f"precmon testbed: {exc}", file=sys.stderr)
        return 1
    for name, path in paths.items():
        print(f"{name}\t{path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
