"""Which precision family a quantization, precision tag, label or model name belongs to.

One classifier for the auto-sweep (a server lists "Q4_K_M": precision "int4") and the report's
advice (a variant labelled "Llama-8B-FP8-dynamic" is FP8, with FP8's quality caveat). Exact
quantization names are looked up first; free text is then matched by substrings. Families follow
docs/design.md §1: fp32, fp16, bf16, fp8, int8, int6, int5, int4, nvfp4, mxfp4, and fp4 where the
name does not say which FP4 it is. It is the core's because the auto-sweep, measure's true labels
and the report all classify with it.
"""

from __future__ import annotations

#: Exact quantization names (GGUF types, checkpoint schemes) → family, widest first; the
#: auto-sweep measures in this order, so its first variant (the baseline) is the widest.
QUANT_FAMILY: dict[str, str] = {
    "F32": "fp32",
    "F16": "fp16",
    "BF16": "bf16",
    "Q8_0": "int8",
    "FP8": "fp8",
    "Q6_K": "int6",
    "Q5_K_M": "int5",
    "Q5_K_S": "int5",
    "Q5_0": "int5",
    "Q4_K_M": "int4",
    "Q4_K_S": "int4",
    "Q4_0": "int4",
    "MXFP4": "mxfp4",
    "NVFP4": "nvfp4",
    "AWQ": "int4",
    "GPTQ": "int4",
}

#: Substrings (lower case) → family, for free text; the first family with a match wins.
SUBSTRINGS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("nvfp4", ("nvfp4",)),
    ("mxfp4", ("mxfp4", "mx_fp4")),
    ("fp4", ("fp4",)),
    ("fp8", ("fp8", "e4m3", "e5m2")),
    ("fp32", ("fp32", "f32", "float32")),
    ("bf16", ("bf16",)),
    ("fp16", ("fp16", "f16", "float16", "half")),
    ("int8", ("int8", "w8a8", "q8", "8bit", "8-bit")),
    ("int4", ("int4", "w4a16", "q4", "iq4", "awq", "gptq", "4bit", "4-bit")),
)


def family(text: str | None) -> str | None:
    """The family of one name ("Q4_K_M" → "int4", "Llama-FP8-dynamic" → "fp8"), None if unknown."""
    if not text:
        return None
    exact = QUANT_FAMILY.get(text.upper())
    if exact is not None:
        return exact
    low = text.casefold()
    for fam, needles in SUBSTRINGS:
        if any(n in low for n in needles):
            return fam
    return None
