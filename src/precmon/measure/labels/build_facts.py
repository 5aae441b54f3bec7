"""How the server's binary was built, and a GPU left idle (docs/design.md §5 `compute_path`).

precmon's own llama.cpp builds (`precmon.testbed.llama_build`) leave `precmon-build.json` beside
their binaries: the flavour (cpu, cuda), the CUDA architectures compiled for ("90", "121a"), the
GPU's compute capability, the CPU's instruction-set tag, and a note where the build lacks
something the GPU has (SM 12.x without its architecture-specific target). A variant whose server
is such a binary (a launched one, or the demo's router) records it as `compute_path.build`; any
other binary has no such file and no `build`.

`gpu-unused:` is raised wherever the compute path says the model ran on a CPU while NVML sees an
NVIDIA GPU on this machine: the power figures then include (or are) that GPU's idle draw, which
is not the inference's. It is said whatever started the server (a CPU build chosen for want of a
CUDA compiler, `--cpu`, `-ngl 0`, vLLM's CPU build).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from precmon.measure.results import VariantResult
from precmon.untrusted import visible

BUILD_RECORD = "precmon-build.json"
#: A build record is a few hundred bytes: a larger file is not one.
RECORD_LIMIT_BYTES = 16 * 1024
#: The record's keys, in the order they are kept; anything else in the file is ignored.
RECORD_KEYS = (
    "built_by",
    "flavour",
    "cuda_architectures",
    "gpu_capabilities",
    "cuda_compiler",
    "isa",
    "llama_cpp_commit",
    "note",
)
TEXT_CHARS = 300
GPU_UNUSED_CODE = "gpu-unused:"


def binary_path(argv0: str | Path | None) -> Path | None:
    """The file a launch's argv[0] runs: itself when it names a path, else PATH's."""
    if argv0 is None:
        return None
    text = str(argv0)
    if "/" not in text:
        found = shutil.which(text)
        return Path(found) if found else None
    return Path(text).expanduser()


def read_build_record(binary: Path | None) -> dict[str, str] | None:
    """The build record beside `binary`, its known keys as escaped one-line text; None when there
    is none or it is not one (too large, not a JSON object)."""
    if binary is None:
        return None
    try:
        with open(binary.parent / BUILD_RECORD, "rb") as f:
            raw = f.read(RECORD_LIMIT_BYTES + 1)
        data = json.loads(raw.decode("utf-8", errors="replace")) if len(raw) <= RECORD_LIMIT_BYTES else None
    except (OSError, ValueError, RecursionError):
        return None
    if not isinstance(data, dict):
        return None
    out = {k: visible(data[k], limit=TEXT_CHARS) for k in RECORD_KEYS if isinstance(data.get(k), str) and data[k]}
    return out or None


def gpu_unused_warning(backend: str | None, gpus: list[str]) -> str | None:
    """`gpu-unused: …` when the model ran on a CPU while NVML sees a GPU; else None."""
    if backend != "CPU" or not gpus:
        return None
    names = ", ".join(sorted(set(gpus)))
    return (
        f"{GPU_UNUSED_CODE} the model ran on the CPU while NVML sees {visible(names, limit=120)}: the GPU's watts "
        "are its idle draw, not the inference's (build llama.cpp with CUDA, or serve with the GPU's layers on it)"
    )


def record_build_facts(result: VariantResult, binary: Path | None, gpus: list[str]) -> None:
    """`compute_path.build` from the binary's build record, and `gpu-unused:` where it applies.

    Runs after the compute path is recorded (measure/labels/true_label.py)."""
    path = result.compute_path
    if path is None:
        return
    record = read_build_record(binary)
    if record is not None:
        path["build"] = record
    backend = path.get("backend")
    warning = gpu_unused_warning(backend if isinstance(backend, str) else None, gpus)
    if warning is not None:
        result.warn(warning)
