"""Build `llama-server`, `llama-quantize`, `llama-bench` and `llama-perplexity` from the llama-cpp-python sdist.

PyPI has no binary wheel of llama.cpp's tools, but the llama-cpp-python sdist carries the full
llama.cpp source (with `gguf-py` and tokenizer-only vocab models). We download it once, build
the tools into a per-user cache keyed by version, flavour (cpu/cuda), the GPU's
architecture (a CUDA build: `sm90`, `sm121`) and the CPU's instruction set (ggml compiles with
-march=native: `precmon.testbed.cpu_flags`), and reuse the result on every later call: CI on the
same machine finds it, a fresh machine or another CPU or GPU rebuilds it. Which flavour this
machine gets is `testbed/build_choice.py`'s; each build leaves `precmon-build.json` beside its
binaries (measure/labels/build_facts.py reads it into the results' `compute_path.build`).

The source, in order: the `source_tarball` argument, `$PRECMON_LLAMA_SOURCE` (a tarball of the
sdist or of a llama.cpp tree: `llama_source.py`), the sdist already in `<cache>/dl/`, else
`pip download` of the sdist into `<cache>/dl/`. A machine without network is given one of the
first three.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, replace
from pathlib import Path

from precmon.measure.labels.build_facts import BUILD_RECORD
from precmon.testbed.build_choice import CUDA, BuildChoice
from precmon.testbed.cachefs import cache_lock
from precmon.testbed.cpu_flags import cpu_flags, isa_tag
from precmon.testbed.cuda_probe import CudaBuild, sm_key
from precmon.testbed.llama_source import SourceError, SourceInfo, extract_tree, inspect_source

LLAMA_CPP_PYTHON_VERSION = "0.3.36"
BUILD_REV = "2"  # bump when the build flags change, so cached builds are rebuilt
#: A build without one of them is completed in place (the cache key stays: cmake builds only what is missing).
TOOLS = ("llama-server", "llama-quantize", "llama-bench", "llama-perplexity")
SOURCE_FILE = "SOURCE.json"  # which llama.cpp the build is (see llama_source.py)


class BuildError(RuntimeError):
    """A step of the build failed; the message names the step, `log` is the build's log (if any)."""

    def __init__(self, message: str, log: Path | None = None) -> None:
        super().__init__(message)
        self.log = log


def cache_root() -> Path:
    """Where builds and models live: $PRECMON_CACHE or ~/.cache/precmon."""
    env = os.environ.get("PRECMON_CACHE")
    return Path(env) if env else Path.home() / ".cache" / "precmon"


@dataclass(frozen=True)
class LlamaBuild:
    """Paths of one cached build."""

    root: Path

    @property
    def source_dir(self) -> Path:
        return self.root / "src"

    @property
    def bin_dir(self) -> Path:
        return self.root / "build" / "bin"

    def tool(self, name: str) -> Path:
        return self.bin_dir / name

    @property
    def vocab_model(self) -> Path:
        return self.source_dir / "models" / "ggml-vocab-llama-spm.gguf"

    @property
    def stamp(self) -> Path:
        return self.root / "BUILD_OK"

    def is_complete(self) -> bool:
        return self.stamp.exists() and all(self.tool(t).exists() for t in TOOLS)


def _build_stem(flavour: str, version: str, capabilities: tuple[str, ...] = ()) -> str:
    arch = f"-{sm_key(capabilities)}" if flavour == CUDA and capabilities else ""
    return f"llama.cpp-{version}-{flavour}{arch}-r{BUILD_REV}"


def build_for(
    flavour: str = "cpu",
    version: str = LLAMA_CPP_PYTHON_VERSION,
    isa: str | None = None,
    capabilities: tuple[str, ...] = (),
) -> LlamaBuild:
    """The build for this CPU (`isa`: an `isa_tag`, this machine's by default) and, for CUDA, these
    GPUs' compute capabilities (none: CMake's own choice of architectures)."""
    return LlamaBuild(cache_root() / f"{_build_stem(flavour, version, capabilities)}-{isa or isa_tag()}")


def chosen_build(choice: BuildChoice) -> LlamaBuild:
    """The paths of the build `choice` asks for (built or not)."""
    return build_for(choice.flavour, capabilities=_capabilities(choice))


def _capabilities(choice: BuildChoice) -> tuple[str, ...]:
    return choice.gpu.capabilities if choice.flavour == CUDA and choice.gpu is not None else ()


def builds_for_other_cpus(
    flavour: str = "cpu", version: str = LLAMA_CPP_PYTHON_VERSION, capabilities: tuple[str, ...] = ()
) -> list[Path]:
    """Complete builds of the same version, flavour and GPU made on CPUs of another instruction set."""
    mine = build_for(flavour, version, capabilities=capabilities).root
    others = mine.parent.glob(f"{_build_stem(flavour, version, capabilities)}-*")
    return sorted(p for p in others if p != mine and p.is_dir() and LlamaBuild(p).is_complete())


def _say(msg: str) -> None:
    print(f"[precmon testbed] {msg}", file=sys.stderr, flush=True)


def _run(step: str, argv: list[str], cwd: Path | None = None, log: Path | None = None) -> None:
    """Run one build step; with a log, echo cmake's "[ NN%]" progress every 15 s."""
    _say(f"{step}: {' '.join(argv)}")
    started = time.monotonic()
    try:
        proc = subprocess.Popen(argv, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    except FileNotFoundError as exc:
        raise BuildError(
            f"{step} failed: {argv[0]} not found ({exc}). On Debian: sudo apt-get install -y cmake g++"
        ) from exc
    assert proc.stdout is not None
    tail: list[str] = []
    last_say = started
    with open(log, "ab") if log else open(os.devnull, "wb") as out:
        for raw in proc.stdout:
            out.write(raw)
            line = raw.decode(errors="replace").rstrip()
            tail = (tail + [line])[-30:]
            now = time.monotonic()
            if log and now - last_say >= 15 and line.startswith("[") and "%]" in line[:8]:
                _say(f"{step}: {line[:6].strip('[] ')} done, {now - started:.0f} s")
                last_say = now
    code = proc.wait()
    if code != 0:
        raise BuildError(f"{step} failed (exit {code}):\n" + "\n".join(tail), log)
    _say(f"{step}: done in {time.monotonic() - started:.0f} s")


def source_tarball_given() -> Path | None:
    """`$PRECMON_LLAMA_SOURCE`: a llama.cpp source tarball to build from instead of the sdist."""
    env = os.environ.get("PRECMON_LLAMA_SOURCE")
    return Path(env).expanduser() if env else None


def fetch_sdist(version: str = LLAMA_CPP_PYTHON_VERSION) -> Path:
    """The llama-cpp-python sdist in `<cache>/dl/`, downloaded the first time (a file put there by
    hand, on a machine without network, is used as it is)."""
    dl = cache_root() / "dl"
    dl.mkdir(parents=True, exist_ok=True)
    sdist = dl / f"llama_cpp_python-{version}.tar.gz"
    if sdist.exists():
        return sdist
    _run(
        "download llama.cpp source",
        [
            sys.executable,
            "-m",
            "pip",
            "download",
            "--no-deps",
            "--no-binary",
            ":all:",
            f"llama-cpp-python=={version}",
            "-d",
            str(dl),
        ],
    )
    if not sdist.exists():
        raise BuildError(f"download llama.cpp source failed: {sdist} not written")
    return sdist


def extract_source(tarball: Path, dest: Path) -> SourceInfo:
    """Extract the llama.cpp tree of a source tarball (the sdist or a bare tree) into dest, atomically.

    Also writes `SOURCE.json` beside dest: which llama.cpp it is, for the build and for write-ups.
    """
    info = inspect_source(tarball)
    _say(f"extract {info.describe()} from {tarball} into {dest}")
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{dest.name}.", suffix=".partial", dir=dest.parent))
    try:
        extract_tree(tarball, info, tmp)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    shutil.rmtree(dest, ignore_errors=True)
    tmp.rename(dest)  # atomic: readers never see half a tree
    (dest.parent / SOURCE_FILE).write_text(json.dumps(info.as_dict(), indent=1) + "\n")
    return info


def source_record(build: LlamaBuild) -> dict[str, str | None]:
    """What `extract_source` recorded of the build's llama.cpp ({} for a tree extracted before it did)."""
    try:
        rec = json.loads((build.root / SOURCE_FILE).read_text())
    except (OSError, ValueError):
        return {}
    return {k: v for k, v in rec.items() if isinstance(k, str) and (v is None or isinstance(v, str))}


def _cpu_has_amx() -> bool:
    try:
        return "amx_int8" in cpu_flags()
    except OSError:
        return False


def build_llama(
    flavour: str = "cpu",
    jobs: int | None = None,
    force: bool = False,
    source_tarball: Path | None = None,
    cmake_args: tuple[str, ...] = (),
    capabilities: tuple[str, ...] = (),
    nvcc: Path | None = None,
) -> LlamaBuild:
    """Build (or find cached) llama.cpp tools. Returns the build's paths.

    Args:
        flavour: "cpu" or "cuda" (`build_chosen` picks it for this machine).
        jobs: parallel compile jobs (default: number of CPUs).
        force: rebuild even if a complete build is cached.
        source_tarball: the llama-cpp-python sdist or a .tar.xz/.tar.gz of a llama.cpp tree, used
            instead of downloading the sdist — for machines with no registry access (default
            `$PRECMON_LLAMA_SOURCE`).
        cmake_args: more `-D` options (e.g. `-DGGML_CUDA_FA=OFF` for a quicker CUDA build), recorded
            in the build's stamp.
        capabilities: CUDA: the GPUs' compute capabilities ("9.0", "12.1") the build is for (none:
            CMake's default); `$CMAKE_CUDA_ARCHITECTURES` overrides the architectures.
        nvcc: CUDA: the compiler, given to CMake (it need not be on PATH).
    """
    build = build_for(flavour, capabilities=capabilities)
    if build.is_complete() and not force:
        return _cached(build, flavour)
    # Another precmon (a demo, a test run) may be building the same one: wait for it, then reuse.
    with cache_lock(build.root.with_name(f".{build.root.name}.lock")):
        if build.is_complete() and not force:
            return _cached(build, flavour)
        if others := builds_for_other_cpus(flavour, capabilities=capabilities):
            names = ", ".join(p.name for p in others)
            _say(f"cached builds of other CPUs' instruction sets ({names}) would die of SIGILL here: building anew")
        cuda = CudaBuild(capabilities, nvcc) if flavour == CUDA else None
        return _build(build, flavour, jobs, source_tarball or source_tarball_given(), cmake_args, cuda)


def build_chosen(
    choice: BuildChoice, jobs: int | None = None, source_tarball: Path | None = None, force: bool = False
) -> LlamaBuild:
    """The build `choice` (testbed/build_choice.py) asks for, built the first time."""
    nvcc = choice.nvcc.path if choice.flavour == CUDA and choice.nvcc is not None else None
    return build_llama(choice.flavour, jobs, force, source_tarball, (), _capabilities(choice), nvcc)


def _cached(build: LlamaBuild, flavour: str) -> LlamaBuild:
    _say(f"cached build found: {build.bin_dir}")
    if not (build.bin_dir / BUILD_RECORD).exists():  # made before builds recorded themselves
        _write_record(build, {"flavour": flavour})
    return build


def _build(
    build: LlamaBuild,
    flavour: str,
    jobs: int | None,
    source_tarball: Path | None,
    cmake_args: tuple[str, ...] = (),
    cuda: CudaBuild | None = None,
) -> LlamaBuild:
    """The build itself (the caller holds the build's lock)."""
    if shutil.which("cmake") is None:
        raise BuildError("configure failed: cmake not found. On Debian: sudo apt-get install -y cmake g++")
    build.root.mkdir(parents=True, exist_ok=True)
    if not (build.source_dir / "CMakeLists.txt").exists():
        try:
            extract_source(source_tarball or fetch_sdist(), build.source_dir)
        except SourceError as exc:
            raise BuildError(f"extract failed: {exc}") from exc
    log = build.root / "build.log"
    log.unlink(missing_ok=True)
    args = [
        "cmake",
        "-S",
        str(build.source_dir),
        "-B",
        str(build.root / "build"),
        "-DCMAKE_BUILD_TYPE=Release",
        "-DLLAMA_CURL=OFF",
        "-DLLAMA_OPENSSL=OFF",
        "-DLLAMA_BUILD_TESTS=OFF",
        "-DLLAMA_BUILD_EXAMPLES=OFF",
        "-DBUILD_SHARED_LIBS=OFF",
    ]
    if commit := source_record(build).get("llama_cpp_commit"):
        args.append(f"-DLLAMA_BUILD_COMMIT={commit[:7]}")  # else build_info says "unknown"
    if _cpu_has_amx():
        # ggml's AMX matmul path segfaults on the CPU test machines (Sapphire Rapids VMs) as soon as
        # a Q4_K/Q8_0 model computes; building without the AMX intrinsics avoids that path.
        flags = "-mno-amx-tile -mno-amx-int8 -mno-amx-bf16"
        args += [f"-DCMAKE_C_FLAGS={flags}", f"-DCMAKE_CXX_FLAGS={flags}"]
    facts: dict[str, str] = {"flavour": flavour}
    if cuda is not None:
        cuda_args, cuda_facts = cuda.cmake_args(build.source_dir)
        args += cuda_args
        facts |= cuda_facts
    args += cmake_args
    _run("configure", args, log=log)
    jobs = jobs or os.cpu_count() or 2
    _say(f"compiling {', '.join(TOOLS)} with {jobs} jobs (about 5 min on 2 cores; log: {log})")
    _run("compile", ["cmake", "--build", str(build.root / "build"), "-j", str(jobs), "--target", *TOOLS], log=log)
    missing = [t for t in TOOLS if not build.tool(t).exists()]
    if missing:
        raise BuildError(f"compile failed: {', '.join(missing)} not produced (see {log})", log)
    _write_record(build, facts)
    build.stamp.write_text(
        f"llama-cpp-python {LLAMA_CPP_PYTHON_VERSION} {flavour} {isa_tag()} {' '.join(cmake_args)}".strip() + "\n"
    )
    return build


def _write_record(build: LlamaBuild, facts: dict[str, str]) -> None:
    """`precmon-build.json` beside the binaries: what the results' `compute_path.build` says."""
    record = {"built_by": f"precmon (llama-cpp-python {LLAMA_CPP_PYTHON_VERSION} source)", **facts, "isa": isa_tag()}
    if commit := source_record(build).get("llama_cpp_commit"):
        record["llama_cpp_commit"] = commit
    try:
        (build.bin_dir / BUILD_RECORD).write_text(json.dumps(record, indent=1) + "\n")
    except OSError as exc:  # a read-only cache still serves; its results just lack `build`
        _say(f"could not write {build.bin_dir / BUILD_RECORD}: {exc.strerror or exc}")


def main(argv: list[str] | None = None) -> int:
    import argparse

    from precmon.testbed.build_choice import choose_build

    p = argparse.ArgumentParser(
        description="Build llama.cpp's server, quantize and bench tools into the precmon cache (skipped when cached)."
    )
    p.add_argument(
        "--flavour",
        choices=["auto", "cpu", "cuda"],
        default="auto",
        help="auto (default): CUDA for this machine's GPU where NVML sees one and nvcc is found, else the CPU",
    )
    p.add_argument("--jobs", type=int, default=None)
    p.add_argument("--force", action="store_true")
    p.add_argument(
        "--source-tarball", type=Path, default=None, help="llama.cpp source tree as .tar.xz (skips the sdist download)"
    )
    a = p.parse_args(argv)
    choice = choose_build(force_cpu=a.flavour == "cpu")
    if a.flavour == CUDA and choice.flavour != CUDA:  # asked for: tried with what was found
        choice = replace(choice, flavour=CUDA)
    for line in choice.lines():
        _say(line)
    try:
        b = build_chosen(choice, a.jobs, a.source_tarball, a.force)
    except BuildError as exc:
        print(f"precmon testbed: {exc}", file=sys.stderr)
        return 1
    print(b.bin_dir)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
