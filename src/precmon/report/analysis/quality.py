"""Precision classes and their typical quality cost, as commonly quoted for each precision class.

The quality figures are approximations (recent models; quantization-aware trained models lose
less): typical figures, quoted as context. What precmon measures itself, where a sweep or bench
scored quality, is in the table's "Quality" rows (measure/quality/score.py, docs/design.md §4).
"""

from __future__ import annotations

from precmon.core import definitions, settings
from precmon.core.metric_keys import KEY
from precmon.core.precision import family
from precmon.core.schema import VariantResult
from precmon.report.analysis.quality_bands import QUALITY_BANDS

# Ordered most to least faithful; used to find "the highest precision measured". An FP4 whose kind
# is not named ranks with MXFP4, the coarser of the two.
PRECISION_RANK = ("fp32", "fp16", "fp8", "int8", "nvfp4", "int4", "fp4", "mxfp4")

QUALITY_CAVEAT = {
    "fp32": "",
    "fp16": "",
    "fp8": "FP8 typically loses <2% quality on recent models.",
    "int8": "INT8 typically loses 1-3% quality.",
    "nvfp4": "NVFP4 typically loses 1-3% quality.",
    "mxfp4": (
        "MXFP4 scales each block of 32 values by a power of two (E8M0), coarser than NVFP4's FP8 scale "
        "per 16 values: expect more loss than NVFP4 (on SmolLM2-135M, llama-perplexity measured mean KLD "
        "0.435 for MXFP4 vs 0.228 for NVFP4 and 0.253 for Q4_0, docs/benchmarks.md: one small model, not a "
        "rule): test your "
        "model before committing."
    ),
    "fp4": (
        "FP4 of a kind the name does not say: NVFP4 typically loses 1-3% quality, MXFP4 (a power-of-two "
        "scale per 32 values) more; find out which one this is."
    ),
    "int4": (
        "INT4 typically loses 2-5% quality, visibly more on models under 13B parameters and on "
        "instruction following (70B+ absorb it better): test your model before committing."
    ),
}

#: Families of `precmon.core.precision` → the class whose quality cost applies.
QUALITY_CLASS = {
    "fp32": "fp32",
    "fp16": "fp16",
    "bf16": "fp16",
    "fp8": "fp8",
    "int8": "int8",
    "fp4": "fp4",
    "nvfp4": "nvfp4",
    "mxfp4": "mxfp4",
    "int4": "int4",
}


def precision_class(variant: VariantResult) -> str | None:
    """ "fp16", "fp8", "int8", "int4", "nvfp4", "mxfp4", "fp32" for a variant (from `precision`,
    else `label`, else `model`); None when no class of the quality table applies. A bare "fp4"
    (older demo files' MXFP4 precision) takes the kind a later text names: `label` "MXFP4"."""
    found = None
    for text in (variant.precision, variant.label, variant.model):
        fam = family(text) if isinstance(text, str) else None
        if found is None or (found == "fp4" and fam in ("nvfp4", "mxfp4")):
            found = fam
        if found is not None and found != "fp4":
            break
    return QUALITY_CLASS.get(found) if found is not None else None


def quality_caveat(variant: VariantResult) -> str:
    """The typical quality cost of the variant's precision ("" for 16/32-bit)."""
    cls = precision_class(variant)
    if cls is None:
        return "Precision class unknown: check the quality on your own prompts."
    return QUALITY_CAVEAT[cls]


def rank(variant: VariantResult) -> int:
    """0 for the most faithful precision class, larger for coarser; unknown classes last."""
    cls = precision_class(variant)
    return PRECISION_RANK.index(cls) if cls in PRECISION_RANK else len(PRECISION_RANK)


#: The glossary term whose definition QUALITY_DEFINITION replaces in the help screen and exports,
#: and metric keys that bring it into `metric_definitions` (a quality metric is not in every file).
QUALITY_TERM = definitions.QUALITY_DEF.term
QUALITY_KEYS = frozenset({KEY.quality_kld_mean})

_POSITIONS, _TOP_K = (settings.BY_NAME[n].default for n in ("quality_positions", "quality_top_k"))

#: The quality definition, for the TUI's help screen, the README and exports (docs/design.md §4).
QUALITY_DEFINITION = (
    "Quality (sweep key quality = true, bench --quality): the server tokenizes one evaluation "
    "text (built in: prose, code and a chat turn; or --quality-text FILE); at each of P positions "
    f"(quality_positions, default {_POSITIONS}) the baseline and each variant give the log-probabilities "
    "of the most probable next tokens given the text so far (teacher forcing, raw model distribution: "
    "no temperature or penalties). Adaptive top-K: at each position the baseline lists the fewest "
    f"tokens that hold {settings.QUALITY_TARGET_MASS:.0%} of its probability (at least quality_top_k, "
    f"default {_TOP_K}; at most {settings.QUALITY_TOP_K_MAX:,}, vLLM at most its --max-logprobs; a plain "
    "OpenAI-compatible server exactly quality_top_k), and each variant as many as the baseline listed "
    "there. KL div = KL(baseline ‖ variant) in nats over the baseline's listed tokens plus one bucket for the "
    "rest, mean ± its 95% error, p99 and max over positions (a baseline token the variant did not list gets the "
    "largest probability the variant's list allows); Top-1 agreement = share of positions whose "
    "most probable tokens match (same top), ± its 95% error; Perplexity × (PPL ratio) = the "
    "variant's perplexity on the text ÷ the baseline's; RMS Δp = root mean square change of the "
    "probability of the text's own token, as llama-perplexity --kl-divergence prints them. "
    'The baseline is the first variant or baseline = "LABEL". Served by llama.cpp '
    "(one request per position), vLLM (prompt_logprobs) and OpenAI-compatible servers with "
    "echo + logprobs; elsewhere n/a with the reason. Bands: " + QUALITY_BANDS
)
