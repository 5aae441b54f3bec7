"""Which positions a document's KL figures were scored on, said next to them (docs/design.md §4).

A KL figure means something only with its positions: llama-perplexity's windows (each scored token
has 256 tokens of context or more, as in every published KL table) read lower than positions from
the text's start, where the first tokens see almost none. Every report names the convention
(`quality.convention`; a file written before the key scored from the start); where variants were
scored differently, the line says their figures do not compare.
"""

from __future__ import annotations

from precmon.core.schema import ResultsDoc, VariantResult
from precmon.core.settings import QUALITY_CONVENTIONS
from precmon.untrusted import visible

LLAMA_PERPLEXITY, FROM_START = QUALITY_CONVENTIONS


def _scored(v: VariantResult) -> bool:
    return v.quality is not None and not v.quality.reason and bool(v.quality.positions)


def _how(v: VariantResult) -> str:
    q = v.quality
    assert q is not None
    text = visible(q.text or "the built-in text", limit=40)
    text = "the built-in text" if text == "built-in" else text
    if q.scored_as == LLAMA_PERPLEXITY:
        windows = (
            f"{q.windows} window{'s' if q.windows != 1 else ''} of {q.window_tokens} tokens, " if q.windows else ""
        )
        return (
            f"as `llama-perplexity --kl-divergence -c {q.window_tokens or 512}` does ({windows}"
            f"{q.positions} positions of {text}, each with half a window of context or more)"
        )
    old = "" if q.convention else "; written before precmon named its convention"
    return (
        f"from the text's start ({q.positions} positions of {text}{old}; reads higher than llama-perplexity's windows)"
    )


def convention_line(doc: ResultsDoc) -> str | None:
    """'Quality: KL scored as `llama-perplexity --kl-divergence -c 512` does (…).', the same per
    group where variants differ, or None when no variant's quality was scored."""
    scored = [v for v in doc.variants if _scored(v)]
    if not scored:
        return None
    groups: dict[str, list[VariantResult]] = {}
    for v in scored:
        groups.setdefault(v.quality.scored_as if v.quality is not None else FROM_START, []).append(v)
    if len(groups) == 1:
        return f"Quality: KL scored {_how(scored[0])}."
    parts = [f"{', '.join(visible(v.label, limit=24) for v in vs)} {_how(vs[0])}" for vs in groups.values()]
    return f"Quality: KL scored differently, so the figures do not compare: {'; '.join(parts)}."
