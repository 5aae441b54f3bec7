"""This machine's x86 instruction-set flags, for the test bed's two native engines.

The machines a cache folder meets differ: AVX-512 with AMX, AVX-512 without, AVX2 only (seen
here, one `~/.cache/precmon` reused on another CPU). llama.cpp is compiled with ggml's default
`-march=native`, so a build cached on an AVX-512 CPU dies of SIGILL (illegal instruction) on an
AVX2 one: builds are keyed by `isa_tag`. vLLM's CPU wheel carries three kernel libraries and loads
one by the CPU at import (`vllm/platforms/cpu.py`): `_C` with AVX-512 and BF16, `_C_AVX512` with
AVX-512, `_C_AVX2` below; its fp8 KV cache needs AVX-512 or AMX (`cpu_attn.py`).
"""

from __future__ import annotations

import hashlib
from pathlib import Path

CPUINFO = Path("/proc/cpuinfo")
# Flags a -march=native compile may use: the vector and bit-manipulation extensions.
ISA_PREFIXES = ("sse", "ssse", "avx", "amx", "fma", "f16c", "bmi", "gfni", "vaes", "vpclmul", "sha_ni", "popcnt")
ISA_NAMES = frozenset({"movbe", "abm", "adx", "aes", "pclmulqdq", "cx16", "xsave", "lzcnt"})
VLLM_AVX2_NEEDS = ("avx2", "fma", "f16c")  # vLLM's _C_AVX2 (Haswell and newer; every Zen)
# torch's own test (`at::cpu::is_avx512_supported`), which vLLM asks: F, BW, DQ and VL together
AVX512 = frozenset({"avx512f", "avx512bw", "avx512dq", "avx512vl"})


def cpu_flags(cpuinfo: Path = CPUINFO) -> frozenset[str]:
    """The first CPU's `flags` line of /proc/cpuinfo; OSError when it cannot be read."""
    for line in cpuinfo.read_text(errors="replace").splitlines():
        if line.startswith("flags"):
            return frozenset(line.partition(":")[2].split())
    return frozenset()


def isa_flags(flags: frozenset[str]) -> frozenset[str]:
    return frozenset(f for f in flags if f in ISA_NAMES or f.startswith(ISA_PREFIXES))


def isa_level(flags: frozenset[str]) -> str:
    if "amx_tile" in flags:
        return "amx"
    if AVX512 <= flags:
        return "avx512"
    if "avx2" in flags:
        return "avx2"
    return "x86"


def isa_tag(cpuinfo: Path = CPUINFO) -> str:
    """A short name for this CPU's instruction set: its level and a hash of every ISA flag.

    Two CPUs share a tag only if a native build made on one runs on the other. A machine whose
    cpuinfo cannot be read (not Linux) is `unknown`: one build, as before there were tags.
    """
    try:
        isa = isa_flags(cpu_flags(cpuinfo))
    except OSError:
        return "unknown"
    digest = hashlib.sha256(" ".join(sorted(isa)).encode()).hexdigest()[:8]
    return f"{isa_level(isa)}-{digest}"


def vllm_kernels(flags: frozenset[str]) -> str:
    """Which of vLLM's CPU kernel libraries loads on a CPU with `flags`."""
    if AVX512 <= flags:
        return "_C (AVX-512 + BF16)" if "avx512_bf16" in flags else "_C_AVX512"
    return "_C_AVX2"


def vllm_int4_ok(flags: frozenset[str]) -> bool:
    """vLLM's CPU build runs AWQ/GPTQ int4 weights only with its AVX-512 kernel libraries."""
    return AVX512 <= flags


def vllm_fp8_kv_ok(flags: frozenset[str]) -> bool:
    """vLLM's CPU attention takes an fp8 KV cache only with AVX-512 or AMX."""
    return AVX512 <= flags or "amx_tile" in flags
