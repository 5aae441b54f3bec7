"""The compute path of a real llama-server log (tests/fakes/logs/llama-server-h200-nvfp4.log: the
first 170 lines of the NVFP4 rung's log from precmon's sweep of the SmolLM2 ladder on an NVIDIA H200,
llama.cpp 0c1e570 built for SM 9.0 without FlashAttention kernels, `-ngl 99 -lv 4`). That version
names its device as `using device CUDA0 (NVIDIA H200)`, not with ggml_cuda_init's lines, which an
earlier hand-written fixture assumed: precmon read this run as a CPU one (docs/design.md §8)."""

from __future__ import annotations

from pathlib import Path

from precmon.core.schema import VariantResult
from precmon.core.warning_codes import FALLBACK_CODE
from precmon.measure.labels.true_label import kernel_of, record_compute_path
from precmon.power.gpu import GpuFact, capabilities_by_name
from precmon.servers.compute_path import ComputePath, from_llama_log, with_capability

H200_REAL = (Path(__file__).parents[1] / "fakes" / "logs" / "llama-server-h200-nvfp4.log").read_text()


def test_the_real_h200_log_is_a_cuda_run_on_the_h200():
    path = from_llama_log(H200_REAL)
    assert path == ComputePath(
        "CUDA", "NVIDIA H200", None, "31/31", built_for="9.0", flash_attention="off (not supported here)"
    )
    assert path.words() == "CUDA (NVIDIA H200)"


def test_without_the_verbose_lines_the_device_is_still_read():
    default_verbosity = "\n".join(
        line for line in H200_REAL.splitlines() if " T " not in line and "system_info" not in line
    )
    path = from_llama_log(default_verbosity)
    assert path is not None and path.backend == "CUDA" and path.device == "NVIDIA H200" and path.built_for is None


def test_nvfp4_on_a_build_for_sm90_is_a_fallback_even_before_the_device_is_known():
    path = from_llama_log(H200_REAL)
    assert path is not None
    kernel, warning = kernel_of("NVFP4", path)
    assert "int8 dot products" in kernel and "for SM 9.0" in kernel
    assert warning is not None and warning.startswith(FALLBACK_CODE)


def test_nvml_completes_the_capability_only_for_exactly_that_gpu():
    path = from_llama_log(H200_REAL)
    done = with_capability(path, {"NVIDIA H200": {"9.0"}})
    assert done is not None and done.capability == "9.0" and done.source.endswith("its SM from NVML")
    assert done.words() == "CUDA (NVIDIA H200, SM 9.0)"
    assert with_capability(path, {"NVIDIA H100": {"9.0"}}) == path  # another GPU: not this one's
    assert with_capability(path, {"NVIDIA H200": {"9.0", "8.0"}}) == path  # ambiguous: left alone
    assert with_capability(None, {"NVIDIA H200": {"9.0"}}) is None


def test_a_blackwell_gpu_with_a_build_for_hopper_only_still_falls_back():
    path = ComputePath("CUDA", "NVIDIA GB10", "12.1", built_for="9.0")
    kernel, warning = kernel_of("NVFP4", path)
    assert "has FP4 instructions, but this build's CUDA code is for SM 9.0" in kernel and warning is not None
    native = ComputePath("CUDA", "NVIDIA GB10", "12.1", built_for="9.0, 12.1")
    assert kernel_of("NVFP4", native)[1] is None


def test_the_recorded_path_says_cuda_and_the_h200():
    r = VariantResult("NVFP4", "nvfp4", "m")
    r.weights = {"main_type": "NVFP4"}
    record_compute_path(r, with_capability(from_llama_log(H200_REAL), {"NVIDIA H200": {"9.0"}}), "unused")
    recorded = r.compute_path
    assert recorded["backend"] == "CUDA" and recorded["capability"] == "9.0" and recorded["built_for"] == "9.0"
    assert "SM 9.0 has no FP4 instructions" in recorded["kernel"]
    assert recorded["flash_attention"] == "off (not supported here)"


class _Meter:
    def __init__(self, facts):
        self.facts = facts

    def gpu_facts(self):
        if isinstance(self.facts, Exception):
            raise self.facts
        return self.facts


def test_capabilities_come_from_the_meters_gpu_facts():
    facts = [GpuFact("nvml:0", "NVIDIA H200", 1980.0, (), None, "9.0"), GpuFact("nvml:1", "NVIDIA H200", 1980.0, ())]
    assert capabilities_by_name(_Meter(facts)) == {"NVIDIA H200": {"9.0"}}
    assert capabilities_by_name(_Meter(RuntimeError("driver gone"))) == {}
    assert capabilities_by_name(None) == {}


def test_a_cuda_path_that_names_neither_sm_nor_build_says_it_cannot_tell():
    path = ComputePath("CUDA", "NVIDIA H200")
    kernel, warning = kernel_of("NVFP4", path)
    assert warning is None and "is not known" in kernel and "-lv 4" in kernel
