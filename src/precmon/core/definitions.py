"""The glossary's entries: what each metric means, as exports, the TUI help and `precmon --help`
print it (docs/design.md §4).

A metric in `core/registry.py` names its `Definition` here; several metrics may share one (the
three power metrics), and `NOTES` holds the entries that are no one metric's. `Definition.rank`
places an entry in the glossary. This module imports nothing of precmon but `core.settings` (the
adaptive top-K's target, said in the Quality definition).
"""

from __future__ import annotations

from dataclasses import dataclass

from precmon.core.settings import QUALITY_TARGET_MASS


@dataclass(frozen=True)
class Definition:
    """One entry of the glossary (several metrics may share one, e.g. the three power metrics).

    Attributes:
        term: the name shown in bold, e.g. "Decode tok/s".
        text: the definition shown under exports and in the TUI help.
        brief: a one-line ASCII form for `precmon --help` ("" leaves it out of the help).
        rank: position in the glossary (smaller first).
    """

    term: str
    text: str
    brief: str
    rank: int


TTFT_DEF = Definition(
    "TTFT",
    "request sent → first chunk carrying generated text (role-only or progress chunks do not count).",
    "request sent -> first chunk carrying generated text",
    10,
)
PREFILL_DEF = Definition(
    "Prefill ms/token",
    "TTFT ÷ prompt tokens actually processed (from the server's usage; a "
    "prompt-cache hit is a failed measurement, not a fast one).",
    "TTFT / prompt tokens processed (cache hits make a run invalid)",
    20,
)
DECODE_DEF = Definition(
    "Decode tok/s",
    "(completion_tokens − 1) ÷ (time of last token chunk − time of first token "
    "chunk); token counts from the server's usage, never from chunk counts.",
    "(completion_tokens - 1) / (last token chunk - first token chunk), token counts from the server's usage",
    30,
)
CHUNK_DEF = Definition(
    "Chunk latency p50/p99",
    "gaps between streamed chunks (one chunk can hold several tokens).",
    "",
    40,
)
POWER_DEF = Definition(
    "Power",
    "average watts over the phase, with the scope of the source named (gpu, module, soc, "
    "package, system, cpu); idle is measured after the server is ready, before load; prefill "
    "is the energy of all prefill requests ÷ their time, so long prompts weigh most.",
    "average watts over the phase, from energy counters where the source has one (NVML, RAPL, spbm)",
    50,
)
DEPTH_DEF = Definition(
    "Context depth",
    "llama-bench's -d: D tokens already in context, served from the prompt cache after one fill "
    "request (its time is the cold prefill at depth D); decode @ dD = decode tok/s after them, prefill "
    "N @ dD = TTFT ÷ the N new tokens; a run is valid when the server's cached count is D (± its block size).",
    "decode and prefill with D tokens already in context (cached), llama-bench -d",
    35,
)
ENERGY_DEF = Definition(
    "Energy per token",
    "energy over the decode phase (first token → last of each decode request, "
    "its prompt processing cut out) ÷ tokens decoded in it (J/token).",
    "decode-phase energy / tokens decoded in it",
    60,
)
QUALITY_DEF = Definition(
    "Quality",
    "teacher-forced on one evaluation text (P positions, each the next token given the text so far): "
    "KL div = mean over positions of KL(baseline ‖ variant) in nats, over the next tokens the baseline "
    f"lists (adaptive top-K: the fewest holding {QUALITY_TARGET_MASS:.0%} of its probability) plus one "
    "bucket for the rest (a token the variant did not list gets the most its list allows), with its p99 "
    "and max; same top (top-1 agreement) = share of positions where both give the same most probable "
    "token; perplexity = exp(−mean log-probability of the text's own next tokens), PPL ratio = the "
    "variant's ÷ the baseline's; RMS Δp = root mean square change of the own token's probability "
    "(llama-perplexity --kl-divergence's figures). ± = half the 95% interval over the positions (1.96 "
    "standard errors; llama-perplexity prints 1). The baseline's own column reads 0 and 100% by "
    "definition.",
    f"mean KL(baseline||variant) +/- 95% (nats) over the tokens holding {QUALITY_TARGET_MASS:.0%} of the "
    "baseline's probability (adaptive top-K) + rest, same top, PPL ratio, RMS dp",
    65,
)
KV_DEF = Definition(
    "KV cache memory",
    "as the server reports its KV cache (a launched llama-server's log at -lv 4, vLLM's startup log "
    "or cache_config_info), never estimated: bytes per context token (all layers, K and V), the "
    "tokens the whole cache holds, the longest single sequence it holds, and how many sequences "
    "of the server's configured context fit at once; n/a where the server does not say.",
    "",
    58,
)
FIT_DEF = Definition(
    "Memory fit",
    "from what was measured, never from a model's config: with F = usable memory − the weights' bytes "
    "(the variant's `fit`: the GPU's memory from NVML, or on unified memory and CPU boxes what "
    "/proc/meminfo offers), users that fit at C tokens = ⌊F ÷ (C × KV bytes per token)⌋ and the context "
    "for U users = ⌊F ÷ (U × KV bytes per token)⌋; the runtime's own buffers are not counted (an upper "
    "bound), nor the model's own context limit.",
    "",
    59,
)
#: Glossary entries that are not one metric.
NOTES: tuple[Definition, ...] = (
    Definition("Monthly kWh", "average decode power × hours/day × 30 ÷ 1000.", "", 70),
    Definition(
        "Medians",
        "each value is the median of the valid repeats; runs with the wrong token count, "
        "a cache hit or an HTTP error are excluded.",
        "",
        80,
    ),
    Definition(
        "± and ≈",
        "± is half the 95% confidence interval of the runs (Student's t-interval for their mean; "
        "with 3 runs t = 4.30, so it is wide unless the runs agree); ≈ after a "
        "ratio: its interval overlaps the baseline's, so the difference is inside the run-to-run noise.",
        "",
        85,
    ),
)
