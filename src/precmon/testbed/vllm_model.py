"""The Hugging Face Llamas that the vLLM test bed serves, each in four precisions, cached.

`vllm_model_writer.py` does the writing under the vLLM venv's Python (precmon's environment has
no torch); this module finds its inputs, runs it, and caches the result under
`~/.cache/precmon/vllm-models/<model>-r<rev>/<variant>/` with the same discipline as the venv: a
lock, a temporary directory unique to the process, a marker written last, one rename.

Two models. `REAL` is SmolLM2-135M-Instruct: the test bed's verified Q4_1 release
(`testbed/real_model.py`, no llama.cpp build needed) read by transformers' GGUF loader, checked
by its answer, then written as bf16, fp16, W8A8 int8 and int4 (AWQ's format) from those weights:
every quality figure and answer of the vLLM test bed comes from it. `TINY` is a 19.8 M Llama with
random weights and llama.cpp's tokenizer-only `ggml-vocab-llama-spm.gguf` (from the cached
llama.cpp source, or from the llama-cpp-python sdist when no llama.cpp build is cached), kept
for the tests of vLLM's wire and speed, which need a server, not a model that says anything.
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
from precmon.testbed.real_model import ModelFetchError, fetch_release
from precmon.testbed.vllm_env import VllmEnv, VllmEnvError, cache_lock, install_vllm, remove_stale_temps

MARKER = "PRECMON_MODELS_OK"
WRITER = Path(__file__).with_name("vllm_model_writer.py")
VOCAB_NAME = "ggml-vocab-llama-spm.gguf"
WRITE_TIMEOUT_S = 900.0
#: vLLM's --dtype for each variant folder. A quantized variant needs no --quantization flag: vLLM
#: reads the method from config.json. W8A8 runs bf16 activations around int8 GEMMs; AWQ's scales are fp16.
DTYPES = {"bf16": "bfloat16", "fp16": "float16", "w8a8-int8": "bfloat16", "awq-int4": "float16"}


@dataclass(frozen=True)
class VllmVariant:
    """One precision variant of one test model: its folder name, the --dtype that serves it as
    such, and the name vLLM serves it under (`smollm2-bf16`, `tiny-awq-int4`)."""

    name: str
    dtype: str  # vLLM's --dtype
    family: str = "smollm2"

    @property
    def served_name(self) -> str:
        return f"{self.family}-{self.name}"


@dataclass(frozen=True)
class VllmModel:
    """One model the test bed writes in every variant of DTYPES, cached under its own revision."""

    family: str  # the folder stem and the served names' prefix
    rev: str  # bump when the writer's output for this model changes, so cached copies are rewritten
    about: str  # one line for the user

    def root(self) -> Path:
        return cache_root() / "vllm-models" / f"{self.family}-r{self.rev}"

    def variant(self, name: str) -> VllmVariant:
        return VllmVariant(name, DTYPES[name], self.family)


#: The real model: SmolLM2-135M-Instruct, its verified Q4_1 release (`testbed/real_model.py`)
#: dequantized by transformers' GGUF reader and written in each variant from those weights.
REAL = VllmModel("smollm2", "1", "SmolLM2-135M-Instruct (Apache-2.0), dequantized from its Q4_1 release — real text")
#: The synthetic one, for tests that need a vLLM server's wire and speed, not what it says.
TINY = VllmModel("tiny", "1", "a 19.8 M Llama with random weights (seed 0) — gibberish text, real speed")
VARIANTS = tuple(DTYPES)


def models_root(model: VllmModel = REAL) -> Path:
    return model.root()


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


def make_vllm_models(env: VllmEnv | None = None, force: bool = False, model: VllmModel = REAL) -> dict[str, Path]:
    """Write (or find cached) every variant of `model`; returns {variant name: model folder}."""
    root = model.root()
    if not is_complete(root) or force:
        env = env or install_vllm()
        with cache_lock(f"vllm-models-{root.name}"):
            if not is_complete(root) or force:
                _write(env, root, model)
    return {name: root / name for name in VARIANTS}


def _source_args(model: VllmModel) -> list[str]:
    """The writer's source: the real model's verified release, or the tiny model's vocabulary."""
    if model.family == REAL.family:
        try:
            return ["--gguf", str(fetch_release())]
        except ModelFetchError as exc:
            raise VllmEnvError(str(exc)) from None
    return ["--vocab", str(find_vocab())]


def _write(env: VllmEnv, root: Path, model: VllmModel) -> None:
    source = _source_args(model)
    root.parent.mkdir(parents=True, exist_ok=True)
    remove_stale_temps(root.parent, root.name)
    tmp = root.with_name(f".{root.name}.tmp-{uuid.uuid4().hex[:8]}")
    argv = [str(env.python), str(WRITER), "--out", str(tmp), *source, "--variants", ",".join(VARIANTS)]
    _say(f"writing {model.about}: {', '.join(VARIANTS)}, with the vLLM venv's transformers (30-120 s)")
    started = time.monotonic()
    try:
        proc = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=WRITE_TIMEOUT_S)
        out = proc.stdout.decode(errors="replace")
        sys.stderr.write("".join(ln for ln in out.splitlines(keepends=True) if not ln.startswith("Converting")))
        if proc.returncode != 0:
            last = out.strip().splitlines()[-1] if out.strip() else "no output"
            raise VllmEnvError(f"writing the vLLM test models failed (exit {proc.returncode}): {last}")
        (tmp / MARKER).write_text(f"{root.name}: {', '.join(VARIANTS)}\n", encoding="utf-8")
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
        description="Write the vLLM test bed's models in bf16, fp16, W8A8 int8 and AWQ-format int4 "
        "(skipped when cached): SmolLM2-135M-Instruct and the tiny random-weight Llama."
    )
    p.add_argument("--model", choices=("all", REAL.family, TINY.family), default="all")
    p.add_argument("--force", action="store_true", help="rewrite even when cached")
    a = p.parse_args(argv)
    chosen = [m for m in (REAL, TINY) if a.model in ("all", m.family)]
    try:
        for model in chosen:
            for name, path in make_vllm_models(force=a.force, model=model).items():
                print(f"{model.family}-{name}\t{path}")
    except (VllmEnvError, BuildError) as exc:
        print(f"precmon testbed: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
