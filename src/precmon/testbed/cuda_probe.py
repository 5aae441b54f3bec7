"""What a CUDA build of llama.cpp needs, found on this machine: the GPU, its architecture, a compiler.

The GPU and its compute capability come from NVML (`power/nvml.py`, the driver precmon already
reads power from): "9.0" on an H200, "12.1" on a DGX Spark's GB10. The architecture llama.cpp is
compiled for is that capability without its dot (`90`), except on SM 12.x, whose FP4 tensor-core
instructions exist only in the architecture-specific target (`120a`, `121a`: not forward
compatible, so plain `121` code has none of them). llama.cpp's own CMake turns a plain 12X into
12Xa where it knows to (ggml/src/ggml-cuda/CMakeLists.txt: "Replace any plain 12X CUDA
architectures with their architecture-specific equivalents 12Xa"); `cmake_knows_arch_specific`
reads that file of the source being built, and a build from a source without it is plain 12X and
says so (`cuda_target`).

The compiler is `nvcc`: `$CUDACXX` (the variable CMake itself reads), then PATH, then the CUDA
toolkit's usual home `/usr/local/cuda/bin` (DGX OS installs it there without putting it on
PATH). Its release decides which architectures it can compile (`MIN_NVCC`).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from precmon.power.nvml import open_nvml

DEFAULT_NVCC = Path("/usr/local/cuda/bin/nvcc")
#: The oldest CUDA release whose nvcc compiles for a GPU architecture (NVIDIA's CUDA release notes:
#: sm_86 came with 11.1, Ada and Hopper with 11.8, sm_100/sm_120 with 12.8, sm_103/sm_121 with 12.9,
#: sm_110 with 13.0). An architecture not listed is tried as it is.
MIN_NVCC: dict[tuple[int, int], tuple[int, int]] = {
    (8, 0): (11, 0),
    (8, 6): (11, 1),
    (8, 7): (11, 4),
    (8, 9): (11, 8),
    (9, 0): (11, 8),
    (10, 0): (12, 8),
    (10, 3): (12, 9),
    (11, 0): (13, 0),
    (12, 0): (12, 8),
    (12, 1): (12, 9),
}
#: The major version whose FP4 instructions need the architecture-specific ("a") target.
ARCH_SPECIFIC_MAJOR = 12
_CAPABILITY = re.compile(r"^(\d{1,2})\.(\d{1,2})$")
_RELEASE = re.compile(r"release (\d{1,3})\.(\d{1,3})")
#: What a CMakeLists that maps 12X to 12Xa contains ("120a-real", "121a", the comment's "12Xa").
_ARCH_SPECIFIC = re.compile(r"\b12(?:\d|X)a\b")
CUDA_CMAKE = Path("ggml") / "src" / "ggml-cuda" / "CMakeLists.txt"


@dataclass(frozen=True)
class GpuSeen:
    """The NVIDIA GPUs NVML sees: the first one's name, every distinct compute capability."""

    name: str
    capabilities: tuple[str, ...]  # ("12.1",); () where NVML does not say
    count: int = 1

    def words(self) -> str:
        """`NVIDIA GB10 (SM 12.1)`, `2× NVIDIA H100 (SM 9.0)`."""
        many = f"{self.count}× " if self.count > 1 else ""
        sm = f" (SM {', '.join(self.capabilities)})" if self.capabilities else ""
        return f"{many}{self.name}{sm}"


@dataclass(frozen=True)
class CudaCompiler:
    """An nvcc that exists and runs; `version` (major, minor) where `--version` said it."""

    path: Path
    version: tuple[int, int] | None

    def words(self) -> str:
        release = f"CUDA {self.version[0]}.{self.version[1]} " if self.version else ""
        return f"{release}nvcc at {self.path}"


def nvidia_gpu(nvml: Any = None) -> tuple[GpuSeen | None, str]:
    """The GPUs NVML sees, or None and why not (no driver, pynvml not installed, no device).

    `nvml` is the pynvml module or a stand-in (tests). Every field degrades on its own, as for
    power (a GB10 answers neither memory nor power-limit queries)."""
    source, missing = open_nvml(nvml)
    if source is None:
        return None, missing[0].reason if missing else "NVML sees no GPU"
    try:
        facts = source.gpu_facts()
    finally:
        source.close()
    if not facts:
        return None, "NVML sees no GPU"
    caps = tuple(sorted({f.compute_capability for f in facts if f.compute_capability}, key=sm_of))
    return GpuSeen(facts[0].name, caps, len(facts)), ""


def sm_of(capability: str) -> tuple[int, int]:
    """ "12.1" → (12, 1); ValueError for anything else."""
    found = _CAPABILITY.match(capability)
    if found is None:
        raise ValueError(f"not a compute capability: {capability!r}")
    return int(found[1]), int(found[2])


def sm_key(capabilities: tuple[str, ...]) -> str:
    """The cache key's architecture part: ("9.0",) → "sm90", ("8.6", "9.0") → "sm86-90"."""
    return "sm" + "-".join(f"{a}{b}" for a, b in map(sm_of, capabilities))


def find_nvcc(
    env: Mapping[str, str] | None = None,
    which: Callable[[str], str | None] = shutil.which,
    default: Path = DEFAULT_NVCC,
    version_of: Callable[[Path], tuple[int, int] | None] | None = None,
) -> tuple[CudaCompiler | None, list[str]]:
    """The first nvcc of `$CUDACXX`, PATH, `default` that runs, and the places looked in."""
    env = os.environ if env is None else env
    version_of = version_of or nvcc_version
    looked: list[str] = []
    candidates: list[tuple[str, str | None]] = [
        ("$CUDACXX", env.get("CUDACXX") or None),
        ("PATH", which("nvcc")),
        (str(default.parent), str(default)),
    ]
    for where, path in candidates:
        looked.append(where)
        if path and os.access(path, os.X_OK) and Path(path).is_file():
            return CudaCompiler(Path(path), version_of(Path(path))), looked
    return None, looked


def nvcc_version(nvcc: Path) -> tuple[int, int] | None:
    """(major, minor) of `nvcc --version` ("Cuda compilation tools, release 12.8, V12.8.93")."""
    try:
        proc = subprocess.run([str(nvcc), "--version"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return None
    found = _RELEASE.search(proc.stdout[-4096:])
    return (int(found[1]), int(found[2])) if found else None


def too_old(nvcc: CudaCompiler, capabilities: tuple[str, ...]) -> str | None:
    """Why this nvcc cannot compile for these GPUs ("CUDA 12.8 cannot build for SM 12.1: it needs
    12.9 or newer"), or None (it can, or its release or the architecture is not known here)."""
    if nvcc.version is None:
        return None
    for cap in capabilities:
        need = MIN_NVCC.get(sm_of(cap))
        if need is not None and nvcc.version < need:
            have = f"{nvcc.version[0]}.{nvcc.version[1]}"
            return f"CUDA {have} cannot build for SM {cap}: it needs CUDA {need[0]}.{need[1]} or newer"
    return None


def cmake_knows_arch_specific(source_dir: Path) -> bool:
    """Whether this llama.cpp's CUDA CMake builds SM 12.x as the architecture-specific 12Xa."""
    try:
        text = (source_dir / CUDA_CMAKE).read_text(encoding="utf-8", errors="replace")[:1_000_000]
    except OSError:
        return False
    return _ARCH_SPECIFIC.search(text) is not None


def cuda_target(capabilities: tuple[str, ...], arch_specific: bool) -> tuple[str, str | None]:
    """(CMAKE_CUDA_ARCHITECTURES, a note or None) for these GPUs: "90"; "121a" on SM 12.x where the
    source's CMake knows the architecture-specific target, else "121" and a note saying what that
    costs (read by the results' `compute_path.build`)."""
    archs, note = [], None
    for major, minor in map(sm_of, capabilities):
        arch = f"{major}{minor}"
        if major == ARCH_SPECIFIC_MAJOR:
            if arch_specific:
                arch += "a"
            else:
                note = (
                    f"built for sm_{arch}, not the architecture-specific sm_{arch}a: this llama.cpp's CUDA CMake "
                    "does not know that target, so its FP4 tensor-core instructions are not in the build"
                )
        archs.append(arch)
    return ";".join(archs), note


@dataclass(frozen=True)
class CudaBuild:
    """What a CUDA build is for and with: the GPUs' compute capabilities, the compiler."""

    capabilities: tuple[str, ...] = ()
    nvcc: Path | None = None

    def cmake_args(self, source_dir: Path) -> tuple[list[str], dict[str, str]]:
        """(CMake's CUDA options, the facts for the build record)."""
        args, facts = ["-DGGML_CUDA=ON"], {}
        arch, note = os.environ.get("CMAKE_CUDA_ARCHITECTURES"), None
        if not arch and self.capabilities:
            arch, note = cuda_target(self.capabilities, cmake_knows_arch_specific(source_dir))
        if arch:
            args.append(f"-DCMAKE_CUDA_ARCHITECTURES={arch}")
        if self.nvcc is not None:
            args.append(f"-DCMAKE_CUDA_COMPILER={self.nvcc}")
            facts["cuda_compiler"] = str(self.nvcc)
        facts["cuda_architectures"] = arch or "CMake's default for this toolkit"
        if self.capabilities:
            facts["gpu_capabilities"] = ", ".join(self.capabilities)
        if note:
            facts["note"] = note
        return args, facts
