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


# /proc/cpuinfo of an Arm server as the kernel prints it: a `Features` line, no `flags` (Grace,
# Neoverse V2, as on a DGX Spark's and GH200's CPU; a Cortex-A76 board for the NEON-only level).
GRACE_FEATURES = (
    "fp asimd evtstrm aes pmull sha1 sha2 crc32 atomics fphp asimdhp cpuid asimdrdm jscvt fcma lrcpc dcpop "
    "sha3 sm3 sm4 asimddp sha512 sve asimdfhm dit uscat ilrcpc flagm ssbs sb paca pacg dcpodp sve2 sveaes "
    "svepmull svebitperm svesha3 svesm4 flagm2 frint svei8mm svebf16 i8mm bf16 dgh bti"
)
A76_FEATURES = "fp asimd evtstrm aes pmull sha1 sha2 crc32 atomics fphp asimdhp cpuid asimdrdm lrcpc dcpop asimddp"


def arm_info(tmp_path: Path, features: str, name: str = "cpuinfo-arm") -> Path:
    p = tmp_path / name
    block = (
        "processor\t: {n}\nBogoMIPS\t: 2000.00\nFeatures\t: {f}\nCPU implementer\t: 0x41\n"
        "CPU architecture: 8\nCPU variant\t: 0x0\nCPU part\t: 0xd4f\nCPU revision\t: 0\n\n"
    )
    p.write_text(block.format(n=0, f=features) + block.format(n=1, f=features))
    return p


def test_an_arm_cpu_is_tagged_from_its_features_line_not_called_x86(tmp_path):
    from precmon.testbed.cpu_flags import cpu_arch, cpu_flags

    grace = arm_info(tmp_path, GRACE_FEATURES)
    assert cpu_arch(grace) == "arm" and {"sve2", "i8mm", "bf16"} <= cpu_flags(grace)
    tag = isa_tag(grace)
    assert tag.startswith("sve2-") and "x86" not in tag
    assert isa_tag(arm_info(tmp_path, A76_FEATURES, "a76")).startswith("neon-")
    # the kernel's event stream is no instruction: it does not split the cache
    assert isa_tag(arm_info(tmp_path, GRACE_FEATURES.replace(" evtstrm", ""), "no-evtstrm")) == tag
    assert isa_tag(arm_info(tmp_path, GRACE_FEATURES.replace(" sve2", ""), "no-sve2")).startswith("sve-")
    assert cpu_arch(info(tmp_path, ZEN4)) == "x86" and isa_tag(info(tmp_path, ZEN4)).startswith("avx512-")


def test_an_arm_build_gets_no_x86_flag_and_its_own_cache_folder(tmp_path, monkeypatch):
    """The AMX rule of the builder is x86's: an Arm CPU's build carries no -mno-amx-* flag (the
    compiler would refuse it), and a Grace build is not an AMX machine's."""
    from precmon.testbed import cpu_flags

    monkeypatch.setenv("PRECMON_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(cpu_flags, "CPUINFO", arm_info(tmp_path, GRACE_FEATURES))
    monkeypatch.setattr(llama_build, "cpu_flags", lambda: cpu_flags.cpu_flags(cpu_flags.CPUINFO))
    monkeypatch.setattr(llama_build, "isa_tag", lambda: isa_tag(cpu_flags.CPUINFO))
    build = llama_build.build_for("cpu")
    assert build.root.name.startswith("llama.cpp-0.3.36-cpu-r") and "-sve2-" in build.root.name
    (build.source_dir / "CMakeLists.txt").parent.mkdir(parents=True)
    (build.source_dir / "CMakeLists.txt").write_text("")
    calls: list[list[str]] = []
    monkeypatch.setattr(llama_build.shutil, "which", lambda _: "/usr/bin/cmake")
    monkeypatch.setattr(llama_build, "_run", lambda step, argv, **_: calls.append(argv))
    with pytest.raises(llama_build.BuildError, match="not produced"):
        llama_build._build(build, "cpu", 1, None)
    assert not [a for a in calls[0] if "amx" in a or "-march" in a]
    # and on an AMX machine the rule holds
    monkeypatch.setattr(llama_build, "cpu_flags", lambda: frozenset(SPR.split()))
    calls.clear()
    with pytest.raises(llama_build.BuildError):
        llama_build._build(build, "cpu", 1, None)
    assert "-DCMAKE_C_FLAGS=-mno-amx-tile -mno-amx-int8 -mno-amx-bf16" in calls[0]
