"""Score one variant's quality against the baseline, after its speed plan (docs/design.md §4).

`measure_quality` tokenizes the text on the variant's own server, asks for the teacher-forced
top-K at each position (measure/quality/fetch.py) and compares them with the reference
(measure/quality/score.py). Without a reference the variant *is* the baseline: its distributions
become the reference, and its own scores are 0 KL and full agreement by definition. Nothing
here records a run or touches the speed metrics: it runs after them, with its own progress line.
"""

from __future__ import annotations

import dataclasses
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from precmon.core import registry, stops
from precmon.core import settings as table
from precmon.core.metric_keys import KEY
from precmon.core.schema import VariantResult
from precmon.file_args import FileArgError, open_file_arg
from precmon.measure.quality.adaptive import TARGET_MASS, TOP_K_MAX, cut_to, trim
from precmon.measure.quality.fetch import (
    PostsJson,
    QualityStopped,
    QualityUnavailable,
    check_supported,
    llamacpp_positions,
)
from precmon.measure.quality.fetch_openai import CHARS_PER_TOKEN_MAX, echo_positions, vllm_positions_capped
from precmon.measure.quality.reference import Reference, text_sha256
from precmon.measure.quality.score import Position, score
from precmon.measure.quality.text import TEXT
from precmon.servers.base import ServerError
from precmon.servers.kinds import capabilities

#: Below this mean top-K mass the KL saw too little of the distribution to be more than a bound.
LOW_TOPK_MASS = 0.5
#: Fewer scored positions than this (and than were asked for) make no estimate: a 2-token text
#: scores one position, whose "KL 0, same top 100%" says nothing. A warning then, on every screen.
MIN_ESTIMATE_POSITIONS = 64
FEW_POSITIONS_CODE = "quality-few:"
#: The metric keys this module fills (core/registry.py; the rest of a variant's quality facts
#: go to its `quality` object).
METRIC_KEYS = (
    KEY.quality_kld_mean,
    KEY.quality_kld_p99,
    KEY.quality_top1_agree,
    KEY.quality_ppl,
    # the trusted format (llama-perplexity --kl-divergence's figures)
    KEY.quality_kld_mean_err95,
    KEY.quality_kld_max,
    KEY.quality_top1_agree_err95,
    KEY.quality_ppl_ratio,
    KEY.quality_ppl_ratio_err95,
    KEY.quality_rms_dp,
    KEY.quality_rms_dp_err95,
)

#: (done, total, text) like the bench plan's progress; text reads "quality 120/512".
SayFn = Callable[[int, int, str], None]


@dataclass(frozen=True)
class QualitySettings:
    """What to score on: P positions of `text` (named `text_name`), top-K of each.

    The defaults are the rows of `precmon.core.settings.QUALITY` (`quality_positions`,
    `quality_top_k`); `with_rows` applies what a command line or a sweep file gave.
    `target_mass` > 0 makes the top-K adaptive (measure/quality/adaptive.py): the baseline asks
    up to `top_k_max` per position and keeps the fewest tokens holding that share of its
    probability, at least `top_k`; 0 asks exactly `top_k` everywhere.
    """

    positions: int = table.BY_NAME["quality_positions"].default
    top_k: int = table.BY_NAME["quality_top_k"].default
    text: str = field(default=TEXT, repr=False)
    text_name: str = "built-in"
    target_mass: float = TARGET_MASS
    top_k_max: int = TOP_K_MAX


class QualityTextError(ValueError):
    """An evaluation text that cannot be used; str() is `FILE: why` (the caller names the key)."""


#: The QualitySettings field each quality row fills: its name less "quality_" (`quality_top_k`
#: → `top_k`); rows without one (`quality`, `quality_ref`) only turn scoring on or name a reference.
_FIELDS = {f.name for f in dataclasses.fields(QualitySettings)}


def with_rows(base: QualitySettings, values: Mapping[str, Any], folder: Path | None = None) -> QualitySettings:
    """`base` with the quality rows set in `values` applied: one loop over the settings table
    (`precmon.core.settings.QUALITY`), for the flags of `bench` (`vars(args)`) and a sweep file's
    tables alike. A TEXT row names a file, read now (relative to `folder` when not absolute), so
    an unusable one is found before anything is measured.

    Raises:
        QualityTextError: `FILE: why` for an unreadable, empty, oversized or non-UTF-8 text.
    """
    changes: dict[str, Any] = {}
    for row in table.QUALITY:
        name, value = row.name.removeprefix("quality_"), values.get(row.dest, values.get(row.name))
        if value is None or name not in _FIELDS:
            continue
        if row.kind != table.TEXT:
            changes[name] = value
            continue
        file = Path(value).expanduser()
        file = folder / file if folder is not None and not file.is_absolute() else file
        try:
            changes[name] = read_quality_text(file)
        except ValueError as exc:
            raise QualityTextError(f"{file}: {exc}") from None
        changes[f"{name}_name"] = file.name
    return dataclasses.replace(base, **changes)


@dataclass
class QualityOutcome:
    """What scoring gave: the metrics, the `quality` facts, and a new reference (baseline only)."""

    metrics: dict[str, float | None]
    info: dict[str, Any]
    reference: Reference | None = None
    warnings: list[str] = field(default_factory=list)

    def apply(self, result: VariantResult) -> None:
        """Put the scores into the variant: metrics beside the speed ones, facts under `quality`."""
        result.metrics.update(self.metrics)
        result.quality = self.info
        for line in self.warnings:
            result.warn(line)
        reason = self.info.get("reason")
        if reason:
            result.note(f"quality: {reason}")


def unavailable(reason: str, settings: QualitySettings, baseline: str) -> QualityOutcome:
    """n/a cells with the reason (no server support, no reference, a stop...)."""
    info = {"baseline": baseline, "positions": 0, "top_k": settings.top_k, "text": settings.text_name, "reason": reason}
    return QualityOutcome(dict.fromkeys(METRIC_KEYS), info)


def _round(key: str, value: float | None) -> float | None:
    return None if value is None else round(value, registry.digits(key))


def _tokens_problem(tokens: list[int] | None, reference: Reference | None) -> str | None:
    """Why these token ids cannot be scored (too few; not the baseline's), or None."""
    if not tokens or len(tokens) < 2:
        return "the server tokenized the text into fewer than 2 tokens"
    if reference is not None and tokens[: len(reference.tokens)] != list(reference.tokens):
        ref_tokens = reference.tokens
        at = next((i for i, (a, b) in enumerate(zip(tokens, ref_tokens, strict=False)) if a != b), len(tokens))
        return f"the tokenizer differs from the baseline's at token {at}"
    return None


def _fetch(
    srv: PostsJson,
    settings: QualitySettings,
    model: str | None,
    reference: Reference | None,
    say: SayFn | None,
    stop: threading.Event | None,
) -> tuple[list[int], list[Position], list[str], int]:
    """(token ids 0 … P, the P positions, notes, the most K asked) by the server kind's method
    (its record's `quality`: servers/kinds.py); the baseline's lists cut to the adaptive target,
    a variant's to the baseline's sizes.

    Raises:
        QualityUnavailable: the text or the tokenization cannot be scored (the reason).
        QualityStopped, ServerError: as the fetchers raise them.
    """
    if reference is not None and reference.text_sha256 != text_sha256(settings.text):
        raise QualityUnavailable(f"the reference was made from another text ({reference.text})")
    sizes = [len(p.top) for p in reference.positions] if reference is not None else None
    method = capabilities(srv.kind).quality
    adaptive = settings.target_mass > 0 and method != "echo"  # the legacy completions' echo lists ≤ 5
    top_k = max(sizes) if sizes else (max(settings.top_k, settings.top_k_max) if adaptive else settings.top_k)
    want = len(reference.tokens) - 1 if reference is not None else settings.positions
    step = max(1, want // 20)

    def progress(done: int, total: int) -> None:
        if say is not None and (done % step == 0 or done == total):
            say(done, total, f"quality {done}/{total}")

    if stop is not None and stop.is_set():  # the one-request methods check only here
        raise QualityStopped()
    if method == "echo":  # the server tokenizes in the same request
        progress(0, want)
        tokens, positions = echo_positions(srv, settings.text, want, top_k, model=model)
        why = _tokens_problem(tokens, reference)
    else:
        all_tokens = srv.tokenize(settings.text, model)
        why = _tokens_problem(all_tokens, reference)
        tokens = (all_tokens or [])[: want + 1]
    if why:
        raise QualityUnavailable(why)
    notes = []
    if len(tokens) - 1 < want:
        where = (
            "the text has"
            if method != "echo"
            else f"the text's first {CHARS_PER_TOKEN_MAX * (want + 1)} characters have"
        )
        notes.append(f"{where} {len(tokens)} tokens: {len(tokens) - 1} positions, not {want}")
    if method == "prompt_logprobs":
        progress(0, len(tokens) - 1)
        positions, used = vllm_positions_capped(srv, tokens, top_k, model=model)
        if used < top_k:
            notes.append(
                f"vLLM's --max-logprobs capped the top-K at {used} (asked {top_k}): start vLLM with "
                f"--max-logprobs {top_k} so the listed tokens can hold {settings.target_mass:.0%} of the probability"
            )
            top_k = used
    elif method == "per-position":
        router = bool(getattr(srv, "is_router", lambda: False)())
        per = sizes if sizes else top_k
        positions = llamacpp_positions(srv, tokens, per, model=model, router=router, progress=progress, stop=stop)
    if sizes:
        positions = cut_to(positions, sizes[: len(positions)])
    elif adaptive:
        positions = trim(positions, settings.target_mass, settings.top_k)
    progress(len(positions), len(positions))
    return tokens, positions, notes, top_k


def measure_quality(
    server: object,
    settings: QualitySettings,
    *,
    label: str,
    model: str | None,
    reference: Reference | None,
    say: SayFn | None = None,
    stop: threading.Event | None = None,
) -> QualityOutcome:
    """Score the variant on `server` (the baseline itself when `reference` is None).

    Never raises for a server's fault: the outcome's cells are n/a and `info["reason"]` says why.
    """
    baseline = reference.label if reference is not None else label
    started = time.monotonic()
    try:
        srv = check_supported(server)
        tokens, positions, notes, asked = _fetch(srv, settings, model, reference, say, stop)
    except QualityUnavailable as exc:
        return unavailable(str(exc), settings, baseline)
    except QualityStopped:
        cut = stops.cut_of(stop) if stop is not None else None
        return unavailable(stops.QUALITY_WORDS[cut or stops.Cut.STOPPED], settings, baseline)
    except ServerError as exc:
        return unavailable(f"a quality request failed: {exc}", settings, baseline)
    top_k = reference.top_k if reference is not None else asked
    new_ref = None
    if reference is None:
        new_ref = Reference(
            label,
            model,
            srv.kind,
            settings.text_name,
            text_sha256(settings.text),
            tuple(tokens),
            top_k,
            tuple(positions),
        )
    base_positions = list(reference.positions) if reference is not None else positions
    s = score(base_positions, positions)
    values = {
        KEY.quality_kld_mean: s.kld_mean_nats,
        KEY.quality_kld_p99: s.kld_p99_nats,
        KEY.quality_top1_agree: s.top1_agree,
        KEY.quality_ppl: s.ppl,
        KEY.quality_kld_mean_err95: s.kld_err95_nats,
        KEY.quality_kld_max: s.kld_max_nats,
        KEY.quality_top1_agree_err95: s.top1_err95,
        KEY.quality_ppl_ratio: s.ppl_ratio,
        KEY.quality_ppl_ratio_err95: s.ppl_ratio_err95,
        KEY.quality_rms_dp: s.rms_dp,
        KEY.quality_rms_dp_err95: s.rms_dp_err95,
    }
    info: dict[str, Any] = {
        "baseline": baseline,
        "positions": s.positions,
        "top_k": top_k,
        "text": settings.text_name,
        "text_sha256": text_sha256(settings.text),
        "seconds": round(time.monotonic() - started, 3),
        "baseline_topk_mass": round(s.base_topk_mass, 6),
        # adaptive top-K (measure/quality/adaptive.py): the share aimed at, the tokens listed on average
        "topk_target_mass": settings.target_mass,
        "top_k_listed_mean": round(sum(len(p.top) for p in base_positions) / len(base_positions), 1),
    }
    if s.base_topk_mass < LOW_TOPK_MASS:
        notes.append(
            f"the baseline's top-{max(len(p.top) for p in base_positions)} holds {s.base_topk_mass:.2%} "
            "of the probability on average: "
            "the KL is a lower bound here (raise quality_top_k, or see docs/design.md §4 Quality)"
        )
    if reference is not None:
        base_ppl = score(list(reference.positions), list(reference.positions)).ppl
        info["baseline_ppl"] = _round(KEY.quality_ppl, base_ppl)
    if notes:
        info["notes"] = notes
    if s.ppl is None:
        info["ppl_reason"] = "the server did not give the text's own token log-probability at every position"
    return QualityOutcome({k: _round(k, v) for k, v in values.items()}, info, new_ref, _few(s.positions, settings))


def _few(scored: int, settings: QualitySettings) -> list[str]:
    """The `quality-few:` warning where too few positions were scored for an estimate."""
    if scored >= min(settings.positions, MIN_ESTIMATE_POSITIONS):
        return []
    n = f"{scored} position{'s' if scored != 1 else ''}"
    return [
        f"{FEW_POSITIONS_CODE} {n} scored, not {settings.positions} (the text or its reference holds no more): "
        "its KL and top-1 agreement are no estimate"
    ]


MAX_TEXT_BYTES = 4 * 2**20


def read_quality_text(path: Path) -> str:
    """The evaluation text of `--quality-text` / `quality_text`.

    Raises:
        ValueError: one line saying what is wrong with the file (the caller names it).
    """
    try:
        with open_file_arg(path) as f:  # bounded: a device such as /dev/zero has no end
            data = f.read(MAX_TEXT_BYTES + 1)
    except FileNotFoundError:
        raise ValueError("no such file") from None
    except FileArgError as exc:
        raise ValueError(str(exc)) from None
    except OSError as exc:
        raise ValueError(f"cannot read: {exc.strerror or exc}") from None
    if len(data) > MAX_TEXT_BYTES:
        raise ValueError(f"larger than {MAX_TEXT_BYTES // 2**20} MiB: not an evaluation text")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ValueError(f"not UTF-8 (byte {exc.start})") from None
    if not text.strip():
        raise ValueError("empty: nothing to score on")
    return text
