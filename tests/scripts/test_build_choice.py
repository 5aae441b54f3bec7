"""Which llama.cpp this machine gets (testbed/build_choice.py, cuda_probe.py): every branch with fakes
of NVML and of the CUDA compiler. GPU + compiler: CUDA for that GPU's own architecture (SM 12.x as
the architecture-specific 12Xa its FP4 instructions need); GPU without a (new enough) compiler: the
CPU, one line naming what is missing and how to install it, and the warning; no GPU: the CPU;
`--cpu`: the CPU whatever is there."""

from __future__ import annotations

from pathlib import Path

import pytest

from precmon.testbed import llama_build
from precmon.testbed.build_choice import CPU, CUDA, choose_build
from precmon.testbed.cuda_probe import (
    CUDA_CMAKE,
    CudaCompiler,
    cmake_knows_arch_specific,
    cuda_target,
    find_nvcc,
    nvidia_gpu,
    too_old,
)
from tests.fakes.nvml import NoDriver, gb10, h200

#: The lines of llama.cpp 0c1e570's ggml/src/ggml-cuda/CMakeLists.txt that map SM 12.x to 12Xa.
ARCH_SPECIFIC_CMAKE = """
            if (CUDAToolkit_VERSION VERSION_GREATER_EQUAL "12.9")
                list(APPEND CMAKE_CUDA_ARCHITECTURES 121a-real)
            endif()
    # Replace any plain 12X CUDA architectures with their "architecture-specific" equivalents 12Xa.
"""
#: An older CMakeLists, from before llama.cpp knew the architecture-specific targets.
PLAIN_CMAKE = """
            if (CUDAToolkit_VERSION VERSION_GREATER_EQUAL "12.8")
                list(APPEND CMAKE_CUDA_ARCHITECTURES 120-real)
            endif()
"""


def fake_nvcc(tmp_path: Path, release: str = "12.9", name: str = "nvcc") -> Path:
    """An executable that answers `--version` like nvcc of that CUDA release."""
    path = tmp_path / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"#!/bin/sh\necho 'Cuda compilation tools, release {release}, V{release}.41'\n")
    path.chmod(0o755)
    return path


def probes(nvml, nvcc: Path | None):
    """The two probes of `choose_build`, faked: NVML, and an nvcc found only at `nvcc`."""
    missing = Path("/nonexistent/cuda/bin/nvcc")

    def gpu():
        return nvidia_gpu(nvml)

    def compiler():
        return find_nvcc(env={}, which=lambda _: None, default=nvcc or missing)

    return {"gpu_probe": gpu, "nvcc_probe": compiler}


def source_tree(tmp_path: Path, cmake: str) -> Path:
    src = tmp_path / "src"
    (src / CUDA_CMAKE).parent.mkdir(parents=True, exist_ok=True)
    (src / CUDA_CMAKE).write_text(cmake)
    return src


def test_an_h200_with_nvcc_builds_cuda_for_sm90_with_every_layer_on_the_gpu(tmp_path):
    choice = choose_build(**probes(h200(), fake_nvcc(tmp_path, "12.8")))
    assert choice.flavour == CUDA and choice.gpu is not None and choice.gpu.capabilities == ("9.0",)
    assert choice.sm == "sm90" and choice.server_args() == ["-ngl", "99"] and not choice.gpu_unused
    assert choice.words() == "CUDA for NVIDIA H200 (SM 9.0)"
    assert choice.lines() == [
        f"llama.cpp build: CUDA for NVIDIA H200 (SM 9.0) (NVML sees it; CUDA 12.8 nvcc at {tmp_path / 'nvcc'})"
    ]
    assert cuda_target(("9.0",), arch_specific=True) == ("90", None)


def test_a_gb10_builds_the_architecture_specific_121a_its_fp4_instructions_need(tmp_path):
    """GB10-shaped NVML: no memory info, no power limit, compute capability 12.1."""
    choice = choose_build(**probes(gb10(), fake_nvcc(tmp_path, "13.0")))
    assert (choice.flavour, choice.sm) == (CUDA, "sm121")
    assert cuda_target(("12.1",), cmake_knows_arch_specific(source_tree(tmp_path, ARCH_SPECIFIC_CMAKE))) == (
        "121a",
        None,
    )
    arch, note = cuda_target(("12.1",), cmake_knows_arch_specific(source_tree(tmp_path / "old", PLAIN_CMAKE)))
    assert arch == "121" and note is not None and "not the architecture-specific sm_121a" in note


def test_the_vendored_llama_cpp_knows_the_architecture_specific_target():
    """The llama.cpp the builder downloads (read from the cached CPU build's source, when there)."""
    src = llama_build.build_for("cpu").source_dir
    if not (src / CUDA_CMAKE).exists():
        pytest.skip(f"no llama.cpp source in the cache ({src}): python -m precmon.testbed.llama_build makes it")
    assert cmake_knows_arch_specific(src)


def test_a_gpu_without_a_compiler_runs_on_the_cpu_says_what_is_missing_and_warns():
    choice = choose_build(**probes(gb10(), None))
    assert choice.flavour == CPU and choice.gpu_unused and choice.server_args() == []
    build_line, missing, warning = choice.lines()
    assert build_line == "llama.cpp build: CPU (no CUDA compiler)"
    assert missing.startswith("NVIDIA GB10 (SM 12.1) found, but no CUDA compiler: nvcc is in none of $CUDACXX, PATH")
    assert "sudo apt-get install -y cuda-toolkit" in missing and "export PATH=/usr/local/cuda/bin:$PATH" in missing
    assert warning.startswith("warning: the inference runs on the CPU while NVIDIA GB10 (SM 12.1) sits idle")
    assert "gpu-unused:" in warning


def test_a_compiler_too_old_for_the_gpu_is_what_is_missing(tmp_path):
    choice = choose_build(**probes(gb10(), fake_nvcc(tmp_path, "12.8")))
    assert choice.flavour == CPU and choice.gpu_unused
    assert choice.missing is not None and choice.missing.startswith(
        "CUDA 12.8 cannot build for SM 12.1: it needs CUDA 12.9 or newer"
    )
    assert too_old(CudaCompiler(Path("nvcc"), (12, 9)), ("12.1",)) is None
    assert too_old(CudaCompiler(Path("nvcc"), None), ("12.1",)) is None  # unknown release: tried


def test_no_gpu_is_the_cpu_build_and_says_why(tmp_path):
    choice = choose_build(**probes(NoDriver(), fake_nvcc(tmp_path)))
    assert (choice.flavour, choice.gpu, choice.missing) == (CPU, None, None)
    assert choice.lines() == [
        "llama.cpp build: CPU (no NVIDIA GPU: driver missing: libnvidia-ml.so not found (no NVIDIA driver installed))"
    ]


def test_cpu_forces_the_cpu_build_and_still_warns_of_the_idle_gpu(tmp_path):
    choice = choose_build(force_cpu=True, **probes(h200(), fake_nvcc(tmp_path)))
    assert (choice.flavour, choice.why, choice.sm) == (CPU, "--cpu", None)
    assert choice.gpu_unused and len(choice.lines()) == 2 and "sits idle" in choice.lines()[1]


def test_nvcc_is_found_in_cudacxx_then_path_then_usr_local_cuda(tmp_path):
    home = fake_nvcc(tmp_path / "cuda" / "bin", "12.9")
    on_path = fake_nvcc(tmp_path / "path", "12.8")
    given = fake_nvcc(tmp_path / "given", "13.0")
    found, looked = find_nvcc(env={}, which=lambda _: None, default=home)
    assert found == CudaCompiler(home, (12, 9)) and looked == ["$CUDACXX", "PATH", str(home.parent)]
    assert find_nvcc(env={}, which=lambda _: str(on_path), default=home)[0] == CudaCompiler(on_path, (12, 8))
    assert find_nvcc(env={"CUDACXX": str(given)}, which=lambda _: str(on_path), default=home)[0].path == given
    assert find_nvcc(env={}, which=lambda _: None, default=tmp_path / "none")[0] is None


def test_a_cuda_build_is_cached_per_architecture_and_configured_for_it(tmp_path, monkeypatch):
    """The cache key names the SM; CMake gets the architecture and the compiler; the build record
    beside the binaries says what was built (compute_path.build in the results)."""
    monkeypatch.setenv("PRECMON_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("CMAKE_CUDA_ARCHITECTURES", raising=False)
    nvcc = fake_nvcc(tmp_path, "13.0")
    choice = choose_build(**probes(gb10(), nvcc))
    build = llama_build.chosen_build(choice)
    assert build.root.name.startswith("llama.cpp-0.3.36-cuda-sm121-r")
    assert build.root != llama_build.chosen_build(choose_build(**probes(h200(), nvcc))).root
    assert build.root != llama_build.build_for("cpu").root
    (build.source_dir / "CMakeLists.txt").parent.mkdir(parents=True)
    (build.source_dir / "CMakeLists.txt").write_text("")
    source_tree(build.root, ARCH_SPECIFIC_CMAKE)
    calls: list[list[str]] = []

    def run(step: str, argv: list[str], **_: object) -> None:
        calls.append(argv)
        if step == "compile":
            for tool in llama_build.TOOLS:
                build.tool(tool).parent.mkdir(parents=True, exist_ok=True)
                build.tool(tool).write_text("")

    monkeypatch.setattr(llama_build.shutil, "which", lambda _: "/usr/bin/cmake")
    monkeypatch.setattr(llama_build, "_run", run)
    assert llama_build.build_chosen(choice) == build
    configure = calls[0]
    assert "-DGGML_CUDA=ON" in configure and "-DCMAKE_CUDA_ARCHITECTURES=121a" in configure
    assert f"-DCMAKE_CUDA_COMPILER={nvcc}" in configure
    from precmon.measure.labels.build_facts import read_build_record

    record = read_build_record(build.tool("llama-server"))
    assert record is not None
    assert (record["flavour"], record["cuda_architectures"], record["gpu_capabilities"]) == ("cuda", "121a", "12.1")
    assert "note" not in record
