"""This machine's instruction-set flags, for the test bed's two native engines.

The machines a cache folder meets differ: AVX-512 with AMX, AVX-512 without, AVX2 only (seen
here, one `~/.cache/precmon` reused on another CPU), and Arm (a DGX Spark's Grace cores are
Neoverse V2 / Cortex-X925: SVE2, I8MM, BF16). llama.cpp is compiled with ggml's default
`-march=native` (`-mcpu=native` on Arm), so a build cached on an AVX-512 CPU dies of SIGILL
(illegal instruction) on an AVX2 one: builds are keyed by `isa_tag`. x86 lists its extensions on
the `flags` line of /proc/cpuinfo, Arm on the `Features` line. vLLM's CPU wheel carries three kernel libraries and loads
one by the CPU at import (`vllm/platforms/cpu.py`): `_C` with AVX-512 and BF16, `_C_AVX512` with
AVX-512, `_C_AVX2` below; its fp8 KV cache needs AVX-512 or AMX (`cpu_attn.py`).
"""

from __future__ import annotations

import hashlib
from pathlib import Path

CPUINFO = Path("/proc/cpuinfo")
#: The /proc/cpuinfo line that lists a CPU's extensions, by architecture.
FLAG_LINES = {"flags": "x86", "Features": "arm"}
# x86 flags a -march=native compile may use: the vector and bit-manipulation extensions.
ISA_PREFIXES = ("sse", "ssse", "avx", "amx", "fma", "f16c", "bmi", "gfni", "vaes", "vpclmul", "sha_ni", "popcnt")
ISA_NAMES = frozenset({"movbe", "abm", "adx", "aes", "pclmulqdq", "cx16", "xsave", "lzcnt"})
VLLM_AVX2_NEEDS = ("avx2", "fma", "f16c")  # vLLM's _C_AVX2 (Haswell and newer; every Zen)
# torch's own test (`at::cpu::is_avx512_supported`), which vLLM asks: F, BW, DQ and VL together
AVX512 = frozenset({"avx512f", "avx512bw", "avx512dq", "avx512vl"})
#: Arm `Features` that are no instructions (the kernel's timer event stream, the ID registers'
#: emulation): two machines differing only in them run the same build.
ARM_NOT_ISA = frozenset({"evtstrm", "cpuid"})
#: Arm's levels, widest first: (the tag's name, the feature that makes it).
ARM_LEVELS = (("sve2", "sve2"), ("sve", "sve"), ("neon", "asimd"))


def cpu_arch(cpuinfo: Path = CPUINFO) -> str | None:
    """Which line the first CPU of /proc/cpuinfo lists its extensions on: "x86" (`flags`), "arm"
    (`Features`), None (neither); OSError when it cannot be read."""
    return _first_flag_line(cpuinfo)[0]


def cpu_flags(cpuinfo: Path = CPUINFO) -> frozenset[str]:
    """The first CPU's `flags` (x86) or `Features` (Arm) line of /proc/cpuinfo; OSError when it
    cannot be read. x86 flag names and Arm feature names do not overlap, so every x86 test
    (`amx_int8`, `avx2`) is simply false on Arm."""
    return _first_flag_line(cpuinfo)[1]


def _first_flag_line(cpuinfo: Path) -> tuple[str | None, frozenset[str]]:
    for line in cpuinfo.read_text(encoding="utf-8", errors="replace").splitlines():
        key, sep, value = line.partition(":")
        arch = FLAG_LINES.get(key.strip()) if sep else None
        if arch is not None:
            return arch, frozenset(value.split())
    return None, frozenset()


def isa_flags(flags: frozenset[str], arch: str | None = "x86") -> frozenset[str]:
    """The flags a native compile may use: x86's vector and bit-manipulation extensions; every Arm
    feature but the few that are no instructions."""
    if arch == "arm":
        return flags - ARM_NOT_ISA
    return frozenset(f for f in flags if f in ISA_NAMES or f.startswith(ISA_PREFIXES))


def isa_level(flags: frozenset[str], arch: str | None = "x86") -> str:
    """The widest vector extension, the tag's readable part: amx, avx512, avx2, x86; sve2, sve,
    neon (Advanced SIMD), arm."""
    if arch == "arm":
        return next((name for name, feature in ARM_LEVELS if feature in flags), "arm")
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
        arch, flags = _first_flag_line(cpuinfo)
    except OSError:
        return "unknown"
    isa = isa_flags(flags, arch)
    digest = hashlib.sha256(" ".join(sorted(isa)).encode()).hexdigest()[:8]
    return f"{isa_level(isa, arch)}-{digest}"


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
