"""The test bed on machines of different CPUs: llama.cpp builds keyed by instruction set (a
-march=native build from an AVX-512 CPU dies of SIGILL on an AVX2 one), vLLM's kernels by CPU."""

from __future__ import annotations

from pathlib import Path

import pytest

from precmon.testbed import llama_build
from precmon.testbed.cpu_flags import isa_tag, vllm_fp8_kv_ok, vllm_int4_ok, vllm_kernels

# flags lines as this workplace's machines print them (shortened to the ISA part and some noise)
ZEN4 = (
    "fpu sse2 ssse3 sse4_2 avx avx2 fma f16c bmi2 avx512f avx512dq avx512bw avx512vl avx512_vnni avx512_bf16 hypervisor"
)
ZEN4_OTHER_HOST = ZEN4.replace(" hypervisor", " hypervisor arat rep_good")  # not ISA: the same build runs
SPR = ZEN4 + " amx_tile amx_int8 amx_bf16"
AVX2 = "fpu sse2 ssse3 sse4_2 avx avx2 fma f16c bmi2 hypervisor"
AVX_ONLY = "fpu sse2 ssse3 sse4_2 avx hypervisor"


def info(tmp_path: Path, flags: str, name: str = "cpuinfo") -> Path:
    p = tmp_path / name
    p.write_text(f"processor\t: 0\nvendor_id\t: X\nflags\t\t: {flags}\n\nprocessor\t: 1\nflags\t\t: {flags}\n")
    return p


def test_tags_differ_exactly_when_a_native_build_could_not_move(tmp_path):
    zen4, other_host, spr, avx2 = (
        isa_tag(info(tmp_path, f, n)) for n, f in [("a", ZEN4), ("b", ZEN4_OTHER_HOST), ("c", SPR), ("d", AVX2)]
    )
    assert zen4 == other_host  # flags that are no instructions do not split the cache
    assert len({zen4, spr, avx2}) == 3
    assert (zen4.split("-")[0], spr.split("-")[0], avx2.split("-")[0]) == ("avx512", "amx", "avx2")
    assert isa_tag(tmp_path / "missing") == "unknown"


def test_vllm_kernels_and_fp8_kv_follow_the_cpu():
    flags = {name: frozenset(f.split()) for name, f in [("zen4", ZEN4), ("spr", SPR), ("avx2", AVX2)]}
    assert vllm_kernels(flags["zen4"]) == "_C (AVX-512 + BF16)"
    assert vllm_kernels(flags["zen4"] - {"avx512_bf16"}) == "_C_AVX512"
    assert vllm_kernels(flags["avx2"]) == "_C_AVX2"
    assert vllm_kernels(flags["zen4"] - {"avx512vl"}) == "_C_AVX2"  # torch wants F, BW, DQ and VL
    assert [vllm_fp8_kv_ok(flags[n]) for n in ("zen4", "spr", "avx2")] == [True, True, False]
    assert [vllm_int4_ok(flags[n]) for n in ("zen4", "spr", "avx2")] == [True, True, False]


def test_a_build_of_another_cpu_is_not_reused_and_is_named(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("PRECMON_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(llama_build, "isa_tag", lambda: isa_tag(info(tmp_path, ZEN4)))
    zen4 = llama_build.build_for("cpu")
    for tool in llama_build.TOOLS:
        zen4.tool(tool).parent.mkdir(parents=True, exist_ok=True)
        zen4.tool(tool).write_text("")
    zen4.stamp.write_text("ok\n")
    assert llama_build.build_llama("cpu") == zen4  # the same CPU: cached
    assert "cached build found" in capsys.readouterr().err

    monkeypatch.setattr(llama_build, "isa_tag", lambda: isa_tag(info(tmp_path, AVX2, "avx2")))
    avx2 = llama_build.build_for("cpu")
    assert avx2.root != zen4.root and avx2.root.name.startswith("llama.cpp-0.3.36-cpu-r")
    assert llama_build.builds_for_other_cpus("cpu") == [zen4.root]
    built: list[Path] = []
    monkeypatch.setattr(llama_build, "_build", lambda b, *_: built.append(b.root) or b)
    assert llama_build.build_llama("cpu") == avx2
    assert built == [avx2.root]
    err = capsys.readouterr().err
    assert zen4.root.name in err and "SIGILL" in err


@pytest.mark.parametrize("flags", [AVX_ONLY, AVX2.replace(" fma", "")])
def test_vllm_needs_avx2_fma_f16c(tmp_path, flags):
    from precmon.testbed.vllm_env import VllmEnvError, check_host

    with pytest.raises(VllmEnvError, match="lacks AVX2"):
        check_host(info(tmp_path, flags), version=(3, 11))
    check_host(info(tmp_path, AVX2, "ok"), version=(3, 11))
