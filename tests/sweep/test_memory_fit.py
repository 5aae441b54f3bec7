"""The memory fit's arithmetic and its basis (docs/design.md §4 "Memory fit"): every figure obeys
weights + users × context × KV ≤ usable and is the largest that does; a missing input is n/a with
why; the GPU's memory where the model ran on a GPU NVML gives memory for (an H200), the host's
where it did not (a CPU run, a GB10's unified memory); a launched llama-server logs its KV size."""

from __future__ import annotations

import pytest

from precmon.core.schema import VariantResult
from precmon.servers.kinds import with_kv_log
from precmon.sweep import memory_fit as mf
from tests.fakes.nvml import NoDriver, gb10, h200

GIB = 2**30


def _variant(size: int | None = 4 * GIB, backend: str | None = "CUDA", kv: int | None = 131072, cap: int = 8192):
    v = VariantResult("Q8_0", model_info={"name": "m", **({"size_bytes": size} if size else {})})
    v.compute_path = {"backend": backend} if backend else None
    v.metrics.update(kv_bytes_per_token=kv, kv_capacity_tokens=cap)
    return v


def test_the_figures_are_the_largest_that_fit():
    fit = mf.fit_record(mf.Usable(128 * GIB, "x"), (8 * GIB, "w"), 131072, 8192)
    free = 120 * GIB
    for ctx, users in fit.users_at.items():
        assert users * int(ctx) * 131072 <= free < (users + 1) * int(ctx) * 131072
    assert fit.users_at == {"8192": 120, "32768": 30}
    assert fit.context_for_users == {"1": 983040, "4": 245760, "16": 61440}
    assert fit.check == "ok: the server's own cache of 8192 tokens (1.0 GiB) fits beside the weights"
    assert mf.fit_metrics(fit) == {"fit_users_at": fit.users_at, "fit_context_for_users": fit.context_for_users}


def test_weights_larger_than_the_memory_fit_no_one_and_the_server_says_otherwise():
    fit = mf.fit_record(mf.Usable(4 * GIB, "x"), (6 * GIB, "w"), 1000, 4096)
    assert fit.users_at == {"8192": 0, "32768": 0} and fit.context_for_users["1"] == 0
    assert fit.check is not None and fit.check.startswith("the server holds 4096 tokens of KV")


@pytest.mark.parametrize(
    ("usable", "weights", "kv", "why"),
    [
        ("n/a: /proc/meminfo has no MemAvailable here", (1, "w"), 10, "/proc/meminfo has no MemAvailable here"),
        (mf.Usable(GIB, "x"), "n/a: the server does not report its model's size", 10, "does not report"),
        (mf.Usable(GIB, "x"), (1, "w"), None, "no KV bytes per token"),
    ],
)
def test_a_missing_input_is_na_with_why(usable, weights, kv, why):
    fit = mf.fit_record(usable, weights, kv, None)
    assert fit.reason is not None and fit.reason.startswith("n/a: ") and why in fit.reason
    assert set(fit.users_at.values()) == {None} and set(fit.context_for_users.values()) == {None}
    assert mf.fit_metrics(fit) == {}


def test_a_discrete_gpu_that_ran_the_model_is_the_basis():
    fit = mf.memory_fit(_variant(), None, [], nvml=h200())
    assert fit.usable_bytes == 141 * GIB and fit.basis == "NVML: memory of 1 GPU (NVIDIA H200)"
    guessed = mf.memory_fit(_variant(backend=None), None, [], nvml=h200())
    assert guessed.basis is not None and "taken to be on the GPU" in guessed.basis


MEMINFO = {"MemTotal": 128 * GIB, "MemAvailable": 100 * GIB, "HugePages_Free": 1024, "Hugepagesize": 2 * 2**20}


@pytest.mark.parametrize("nvml", [gb10, NoDriver])
def test_unified_memory_and_cpu_runs_take_the_host_memory_before_the_launch(nvml):
    fit = mf.memory_fit(_variant(backend="CUDA" if nvml is gb10 else "CPU"), MEMINFO, [], nvml=nvml())
    assert fit.usable_bytes == 102 * GIB  # MemAvailable + 2 GiB of free HugePages
    assert fit.basis == "/proc/meminfo: MemAvailable 100.0 GiB before the server started + free HugePages 2.0 GiB"


def test_a_cpu_run_on_a_gpu_box_is_the_host_memory(monkeypatch):
    monkeypatch.setattr(mf, "meminfo_now", lambda: {"MemAvailable": 20 * GIB})
    fit = mf.memory_fit(_variant(backend="CPU"), None, [], nvml=h200())
    assert fit.usable_bytes == 20 * GIB and "its own memory not found here: understated" in (fit.basis or "")


def test_a_running_server_adds_back_what_it_holds(monkeypatch):
    monkeypatch.setattr(mf, "meminfo_now", lambda: {"MemAvailable": 20 * GIB})
    monkeypatch.setattr(mf, "rss_anon_bytes", lambda pid: 3 * GIB if pid == 42 else None)
    fit = mf.memory_fit(_variant(backend="CPU"), None, [42, 43], nvml=NoDriver())
    assert fit.usable_bytes == 23 * GIB and "the server's own memory 3.0 GiB (RssAnon" in (fit.basis or "")


def test_a_launched_llama_server_gets_the_log_level_of_its_kv_size_unless_one_is_given():
    assert with_kv_log(["/b/llama-server", "-m", "x.gguf"]) == ["/b/llama-server", "-m", "x.gguf", "-lv", "4"]
    assert with_kv_log(["llama-server", "--verbosity=3"]) == ["llama-server", "--verbosity=3"]
    assert with_kv_log(["llama-server", "-v"]) == ["llama-server", "-v"]
    assert with_kv_log(["python", "-m", "vllm.entrypoints.openai.api_server"])[-1] != "4"
