"""Answers, true labels and compute paths (design §8 "Answers", §8 "True labels")."""

from __future__ import annotations

import struct

import pytest

from precmon.core.answer import ANSWER_TOKENS, Answer, diverges_at, read_answer
from precmon.core.schema import VariantResult
from precmon.core.warning_codes import FALLBACK_CODE
from precmon.measure.answer import ask
from precmon.measure.labels.true_label import kernel_of, local_file, record_compute_path, record_weights
from precmon.servers.base import ServerError, StreamResult
from precmon.servers.compute_path import ComputePath, from_llama_log

H200_LOG = """ggml_cuda_init: found 1 CUDA devices (Total VRAM: 143167 MiB):
  Device 0: NVIDIA H200, compute capability 9.0, VMM: yes, VRAM: 143167 MiB
load_tensors: offloaded 33/33 layers to GPU
"""
SPARK_LOG = """ggml_cuda_init: found 1 CUDA devices (Total VRAM: 122000 MiB):
  Device 0: NVIDIA GB10, compute capability 12.1, VMM: yes, VRAM: 122000 MiB
"""
#: a router's child at -lv 4 on a CPU build: its system_info names only the CPU
CPU_LOG = (
    "[55557] 0.00.004.228 I cmn  common_param: system_info: n_threads = 2 (n_threads_batch = 2) / 2 | "
    "CPU : SSE3 = 1 | AVX2 = 1 | AVX512 = 1 | OPENMP = 1 | REPACK = 1 | \n"
)
#: the same child at the default verbosity: the lines every backend logs there, no backend named
DEFAULT_VERBOSITY_LOG = (
    "[55557] 0.00.023.020 I srv    load_model: loading model '/m/smollm2-F16.gguf'\n"
    "[55557] \n[55557] 0.00.717.819 I cmn          init: llama threadpool init, n_threads = 2\n"
)


# ---- diverges_at / read_answer ------------------------------------------------------------------
@pytest.mark.parametrize(
    ("base", "text", "at"),
    [
        ("The sky is blue.", "The sky is blue.", None),
        ("The sky is blue because", "The sky appears blue", 2),
        ("Rayleigh scattering", "Mie scattering", 0),
        ("The sky blue is a result", "The sky blue", 3),  # stopped early: parts where it stopped
        ("A b", "A b c", 2),
        ("", "", None),
    ],
)
def test_diverges_at_names_the_first_different_word(base, text, at):
    assert diverges_at(base, text) == at


def test_read_answer_takes_nothing_on_trust():
    assert read_answer(None) is None and read_answer({"text": "x"}) is None and read_answer([1]) is None
    a = read_answer({"prompt": "q", "text": "x" * 5000, "tokens": True, "finish_reason": 3})
    assert a is not None and len(a.text or "") == 2000 and a.tokens is None and a.finish_reason is None
    empty = read_answer({"prompt": "q", "text": ""})
    assert empty is not None and empty.text is None and empty.error == "no text recorded"


class _Server:
    kind = "llamacpp"

    def __init__(self, result=None, exc=None):
        self.result, self.exc, self.reqs = result, exc, []

    def stream(self, req):
        self.reqs.append(req)
        if self.exc is not None:
            raise self.exc
        return self.result


def test_ask_is_greedy_on_the_chat_endpoint_and_stops_at_the_models_end():
    res = StreamResult(sent_s=0.0, completion_tokens=17, finish_reason="stop")
    res.add_text(0.1, "  The sky blue.  ")
    server = _Server(res)
    a = ask(server, "m")
    req = server.reqs[0]
    assert (req.temperature, req.ignore_eos, req.endpoint, req.max_tokens, req.model) == (
        0.0, False, "chat", ANSWER_TOKENS, "m",
    )  # fmt: skip
    assert a == Answer(req.prompt, "The sky blue.", 17, "stop")
    assert a.to_dict()["max_tokens"] == ANSWER_TOKENS


def test_ask_records_why_there_is_no_answer():
    assert ask(_Server(exc=ServerError("HTTP 500: boom")), None).error == "HTTP 500: boom"
    broken = StreamResult(sent_s=0.0, error="stream cut")
    assert ask(_Server(broken), None).error == "stream cut"
    assert ask(_Server(StreamResult(sent_s=0.0)), None).error == "the server answered no text"


# ---- compute path -----------------------------------------------------------------------------
def test_the_compute_path_is_read_from_the_servers_log():
    h200 = from_llama_log(H200_LOG)
    assert h200 == ComputePath("CUDA", "NVIDIA H200", "9.0", "33/33")
    assert h200.words() == "CUDA (NVIDIA H200, SM 9.0)"
    assert from_llama_log(CPU_LOG) == ComputePath("CPU", source="the server's log (no GPU backend started)")
    assert from_llama_log(H200_LOG.replace("33/33", "0/33")).backend == "CPU"  # -ngl 0 on a CUDA build
    assert from_llama_log("ggml_vulkan: Found 1 Vulkan devices:\nggml_vulkan: 0 = AMD Radeon 8060S | uma: 1\n") == (
        ComputePath("Vulkan", "AMD Radeon 8060S")
    )
    assert from_llama_log("") is None and from_llama_log("some other program's output") is None
    # a CUDA server at the default verbosity logs these too: no backend is read from them (a CUDA
    # demo's router children were once read as CPU, and warned gpu-unused on a busy GPU)
    assert from_llama_log(DEFAULT_VERBOSITY_LOG) is None


@pytest.mark.parametrize(
    ("main", "log", "warned", "words"),
    [
        ("NVFP4", H200_LOG, True, "SM 9.0 has no FP4 instructions"),
        ("MXFP4", CPU_LOG, True, "a CPU has no FP4 arithmetic"),
        ("NVFP4", SPARK_LOG, False, "native NVFP4 MMA (SM 12.1"),
        ("Q8_0", H200_LOG, False, "CUDA kernels for Q8_0"),
        ("F16", CPU_LOG, False, "CPU kernels for F16"),
    ],
)
def test_fp4_off_blackwell_is_named_a_fallback_kernel(main, log, warned, words):
    path = from_llama_log(log)
    assert path is not None
    kernel, warning = kernel_of(main, path)
    assert words in kernel
    assert (warning is not None) is warned
    if warning:
        assert warning.startswith(FALLBACK_CODE) and main in warning


def test_record_compute_path_warns_once_and_says_why_when_there_is_none():
    r = VariantResult("NVFP4", "nvfp4", "m")
    r.weights = {"main_type": "NVFP4"}
    record_compute_path(r, from_llama_log(H200_LOG), "unused")
    assert r.compute_path["backend"] == "CUDA" and "int8" in r.compute_path["kernel"]
    assert [w for w in r.warnings if w.startswith(FALLBACK_CODE)] == r.warnings
    none = VariantResult("x", None, None)
    record_compute_path(none, None, "not launched by precmon")
    assert none.compute_path == {"reason": "not launched by precmon"} and none.warnings is None


# ---- weights ----------------------------------------------------------------------------------
def _s(text: str) -> bytes:
    b = text.encode()
    return struct.pack("<Q", len(b)) + b


def _gguf(path, file_type: int, tensors: list[tuple[str, list[int], int]]):
    out = b"GGUF" + struct.pack("<IQQ", 3, len(tensors), 1) + _s("general.file_type") + struct.pack("<II", 4, file_type)
    for name, dims, tid in tensors:
        out += _s(name) + struct.pack("<I", len(dims)) + b"".join(struct.pack("<Q", d) for d in dims)
        out += struct.pack("<IQ", tid, 0)
    path.write_bytes(out)
    return path


def test_a_file_whose_type_lies_is_named_by_what_it_holds(tmp_path):
    """NVFP4 tensors in a file whose file_type says Q8_0 (made without --override-kv): the
    server-reported precision becomes NVFP4, a note says so, bits per weight is a metric."""
    f = _gguf(tmp_path / "m.gguf", 7, [("blk.0.attn_q.weight", [64, 64], 40), ("token_embd.weight", [64, 4], 8)])
    r = VariantResult("m", "Q8_0", "m")
    mix = record_weights(r, f, "Q8_0")
    assert mix is not None and r.precision == "NVFP4"
    assert r.weights["main_type"] == "NVFP4" and r.weights["file_type"] == "Q8_0"
    assert r.metrics["weights_bits_per_weight"] == pytest.approx(mix.bits_per_weight, abs=1e-3)
    assert any(n.startswith("weights: Q8_0 by its name or file type; holds") for n in r.notes)


def test_a_declared_precision_is_kept_and_a_fallback_mix_is_named(tmp_path):
    """A Q4_K_M that is mostly Q5_0 keeps its name (same family question is the user's) with a note."""
    f = _gguf(tmp_path / "k.gguf", 15, [("a.weight", [32, 64], 6), ("b.weight", [256, 4], 12)])
    r = VariantResult("k", "my-int4", "k")
    record_weights(r, f, "Q4_K_M")
    assert r.precision == "my-int4" and r.weights["main_type"] == "Q5_0"
    assert any("holds" in n and "Q5_0" in n for n in r.notes)


def test_an_unreadable_file_is_a_note_not_a_failure(tmp_path):
    bad = tmp_path / "bad.gguf"
    bad.write_bytes(b"not a gguf")
    r = VariantResult("x", None, None)
    assert record_weights(r, bad, "Q8_0") is None
    assert r.weights is None and r.notes[0].startswith("weights: bad.gguf could not be read")


def test_only_this_machines_files_are_read(tmp_path):
    f = tmp_path / "m.gguf"
    f.write_bytes(b"x")
    assert local_file("http://127.0.0.1:8080", str(f), launched=False) == f
    assert local_file("http://gpu-box:8080", str(f), launched=False) is None
    assert local_file("http://gpu-box:8080", str(f), launched=True) == f
    assert local_file("http://127.0.0.1:8080", str(tmp_path / "gone.gguf"), launched=False) is None
    assert local_file("http://127.0.0.1:8080", None, launched=True) is None
