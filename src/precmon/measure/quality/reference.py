"""The baseline's distributions, saved so later variants score against them (docs/design.md §4).

A sweep's launch-mode variants run with the baseline's server stopped, `--resume` runs in a new
process and `bench --quality-ref` on another day: all of them need the baseline's top-K lists
without the baseline. `quality-ref.json` in the out dir (schema `precmon.quality_ref/2`; /1, written
before scoring conventions, is read as from-start) holds them; `bench --quality` stores the same
object in its results JSON under the variant's `quality_reference`. `bench --quality-ref` also takes
the base file of `llama-perplexity --kl-divergence-base` (measure/quality/llama_base.py). A
reference is read as untrusted input: one line naming the file and field.
"""

from __future__ import annotations

import hashlib
import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from precmon.core.settings import BY_NAME, MAX_QUALITY_POSITIONS, QUALITY_TARGET_MASS, QUALITY_TOP_K_MAX
from precmon.file_args import FileArgError, open_file_arg
from precmon.measure.quality.llama_base import KIND as BASE_KIND
from precmon.measure.quality.llama_base import BaseFileError, base_positions, is_base_file, read_base_file
from precmon.measure.quality.score import Position
from precmon.measure.quality.windows import (
    CONVENTIONS,
    FROM_START,
    LLAMA_PERPLEXITY,
    WINDOW_TOKENS,
    Cut,
    cut,
    windows_for,
)
from precmon.measure.quality.windows import per_window as window_positions
from precmon.measure.results import write_json_atomic
from precmon.untrusted import visible

SCHEMA = "precmon.quality_ref/2"
#: Written before conventions: positions 0 … P − 1 from the text's first token.
SCHEMA_FROM_START = "precmon.quality_ref/1"
MAX_WINDOW = 1 << 20
#: What a base file is read with when no setting says otherwise (the quality rows' defaults).
DEFAULT_POSITIONS: int = BY_NAME["quality_positions"].default
DEFAULT_TOP_K: int = BY_NAME["quality_top_k"].default
TARGET_MASS = QUALITY_TARGET_MASS
FILE_NAME = "quality-ref.json"
MAX_FILE_BYTES = 256 * 2**20
MAX_POSITIONS = MAX_QUALITY_POSITIONS
MAX_TOP_K = QUALITY_TOP_K_MAX  # an adaptive baseline lists up to this many a position
MAX_TOKEN_ID = 10_000_000
#: How far above 1 the listed probabilities of a position may sum (each log-probability may be
#: up to 0.01 above 0, the rounding a server's float32 leaves): beyond it they are no distribution.
SUM_SLACK = 0.01


class QualityRefError(ValueError):
    """A reference file or object is unusable; str() is one line naming the file and field."""


def text_sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class Reference:
    """The baseline's teacher-forced distributions over one text.

    Attributes:
        label: the baseline variant's label (the table's "KL div vs LABEL").
        model: its model name, if known.
        kind: its server kind.
        text: where the text came from ("built-in" or a file name).
        text_sha256: of the text, so a reference is never used with another text (None: a
            llama-perplexity base file, which holds token ids only; they are compared instead).
        tokens: the text's token ids the windows were cut from (measure/quality/windows.py):
            from-start, those of positions 0 … P (P + 1 ids: each position predicts the next);
            llama-perplexity, whole windows of `window` ids.
        top_k: K asked for.
        positions: P positions, window after window.
        convention: "llama-perplexity" or "from-start" (measure/quality/windows.py).
        window: the tokens of a llama-perplexity window.
        bos: the id the baseline's model put first (None: none).
        bos_known: False where the reference cannot say (a base file): the server's is used.
        n_vocab: the vocabulary size of the model it came from, where known (a base file says it).
    """

    label: str
    model: str | None
    kind: str
    text: str
    text_sha256: str | None
    tokens: tuple[int, ...]
    top_k: int
    positions: tuple[Position, ...]
    convention: str = FROM_START
    window: int = WINDOW_TOKENS
    bos: int | None = None
    bos_known: bool = True
    n_vocab: int | None = None

    def cut(self, bos: int | None = None) -> Cut:
        """The windows the reference's positions were scored on (`bos`: the server's, where the
        reference does not know its own)."""
        first = self.bos if self.bos_known else bos
        return cut(self.tokens, self.convention, len(self.positions), window=self.window, bos=first)

    def to_dict(self) -> dict[str, Any]:
        return {
            "schema": SCHEMA,
            "label": self.label,
            "model": self.model,
            "kind": self.kind,
            "text": self.text,
            "text_sha256": self.text_sha256,
            "convention": self.convention,
            "window": self.window,
            "bos": self.bos,
            "top_k": self.top_k,
            "tokens": list(self.tokens),
            "positions": [
                # not rounded: a Q8_0's KL is ~1e-7 nats, made of log-prob differences that size
                {"top": [[t, lp] for t, lp in p.top], "own": p.own_logprob}
                for p in self.positions
            ],
        }

    @classmethod
    def from_dict(cls, d: Any, where: str) -> Reference:
        """The Reference a `to_dict` wrote; QualityRefError naming `where` and the field otherwise."""
        if not isinstance(d, dict):
            raise QualityRefError(f"{where}: expected an object, got {type(d).__name__}")
        if d.get("schema") not in (SCHEMA, SCHEMA_FROM_START):
            raise QualityRefError(f"{where}.schema: expected {SCHEMA!r}, got {_shown(d.get('schema'))}")
        for key in ("label", "kind", "text", "text_sha256"):
            if not isinstance(d.get(key), str):
                raise QualityRefError(f"{where}.{key}: expected a string")
        model = d.get("model")
        if model is not None and not isinstance(model, str):
            raise QualityRefError(f"{where}.model: expected a string or null")
        top_k = d.get("top_k")
        if not isinstance(top_k, int) or isinstance(top_k, bool) or not 1 <= top_k <= MAX_TOP_K:
            raise QualityRefError(f"{where}.top_k: expected an integer 1-{MAX_TOP_K}, got {_shown(top_k)}")
        tokens, raw_positions = d.get("tokens"), d.get("positions")
        if not isinstance(tokens, list) or not all(_is_int(t) and 0 <= t <= MAX_TOKEN_ID for t in tokens):
            raise QualityRefError(f"{where}.tokens: expected a list of token ids")
        if not isinstance(raw_positions, list) or not 1 <= len(raw_positions) <= MAX_POSITIONS:
            raise QualityRefError(f"{where}.positions: expected a list of 1-{MAX_POSITIONS} positions")
        convention, window, bos = _windowing(d, where, len(tokens), len(raw_positions))
        positions = tuple(_position(p, f"{where}.positions[{i}]", top_k) for i, p in enumerate(raw_positions))
        return cls(
            d["label"], model, d["kind"], d["text"], d["text_sha256"], tuple(tokens), top_k, positions,
            convention, window, bos,
        )  # fmt: skip


def _windowing(d: dict[str, Any], where: str, n_tokens: int, n_positions: int) -> tuple[str, int, int | None]:
    """(convention, window, bos) of a reference object, checked against its ids and positions."""
    convention: Any = FROM_START
    window: Any = WINDOW_TOKENS
    bos: Any = None
    if d.get("schema") != SCHEMA_FROM_START:
        convention, window, bos = d.get("convention"), d.get("window"), d.get("bos")
        if convention not in CONVENTIONS:
            raise QualityRefError(
                f"{where}.convention: expected one of {', '.join(CONVENTIONS)}, got {_shown(convention)}"
            )
        if not _is_int(window) or not 4 <= window <= MAX_WINDOW:
            raise QualityRefError(f"{where}.window: expected an integer 4-{MAX_WINDOW}, got {_shown(window)}")
        if bos is not None and not (_is_int(bos) and 0 <= bos <= MAX_TOKEN_ID):
            raise QualityRefError(f"{where}.bos: expected a token id or null, got {_shown(bos)}")
    if convention == FROM_START and n_tokens != n_positions + 1:
        raise QualityRefError(f"{where}.tokens: {n_tokens} ids for {n_positions} positions (expected one more)")
    if convention == LLAMA_PERPLEXITY:
        windows = n_tokens // window
        if windows < 1 or n_tokens % window or n_positions != windows * window_positions(window):
            raise QualityRefError(
                f"{where}.tokens: {n_tokens} ids and {n_positions} positions are not whole windows of {window}"
            )
    return str(convention), int(window), bos


def _shown(value: object) -> str:
    """A file's value in an error: its repr, escapes removed, at most 40 characters (one line)."""
    return visible(repr(value), limit=40)


def _is_int(x: object) -> bool:
    return isinstance(x, int) and not isinstance(x, bool)


def _logprob(x: object) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x) and x <= 0.01


def _position(p: Any, where: str, top_k: int) -> Position:
    if not isinstance(p, dict) or not isinstance(p.get("top"), list) or not 1 <= len(p["top"]) <= top_k:
        raise QualityRefError(f"{where}.top: expected a list of 1-{top_k} [token, logprob] pairs")
    top: list[tuple[int, float]] = []
    for j, pair in enumerate(p["top"]):
        if not (isinstance(pair, list) and len(pair) == 2 and _is_int(pair[0]) and _logprob(pair[1])):
            raise QualityRefError(f"{where}.top[{j}]: expected [token id, log-probability ≤ 0], got {_shown(pair)}")
        if any(t == pair[0] for t, _ in top):  # a KL over a list that counts a token twice means nothing
            raise QualityRefError(f"{where}.top[{j}]: token {pair[0]} listed twice")
        top.append((int(pair[0]), float(pair[1])))
    mass = math.fsum(math.exp(lp) for _, lp in top)
    if mass > 1 + SUM_SLACK:
        raise QualityRefError(f"{where}.top: its probabilities sum to {mass:.3g}, more than 1: not a distribution")
    own = p.get("own")
    if own is not None and not _logprob(own):
        raise QualityRefError(f"{where}.own: expected a log-probability ≤ 0 or null, got {_shown(own)}")
    return Position(tuple(top), None if own is None else float(own))


def save_reference(path: Path, ref: Reference) -> None:
    """Write `ref` atomically (a reader never sees half a file)."""
    write_json_atomic(path, ref.to_dict())


def _reject_constant(name: str) -> Any:
    raise ValueError(f"bare {name} is not JSON")


def load_reference(path: Path, positions: int = DEFAULT_POSITIONS) -> Reference:
    """A reference from a `quality-ref.json`, from a results JSON whose variant carries
    `quality_reference` (the first such variant), or from a llama-perplexity base file (its first
    windows, as many as `positions` need).

    Raises:
        QualityRefError: one line naming the file and what is wrong.
    """
    if is_base_file(path):
        return _base_reference(path, positions)
    try:
        if path.stat().st_size > MAX_FILE_BYTES:
            raise QualityRefError(f"{path}: larger than {MAX_FILE_BYTES // 2**20} MiB: not a reference")
        with open_file_arg(path) as f:  # bounded: a device such as /dev/zero has size 0 and no end
            data = f.read(MAX_FILE_BYTES + 1)
        if len(data) > MAX_FILE_BYTES:
            raise QualityRefError(f"{path}: larger than {MAX_FILE_BYTES // 2**20} MiB: not a reference")
        doc = json.loads(data.decode("utf-8"), parse_constant=_reject_constant)
    except QualityRefError:  # already one line naming the file (it is a ValueError too)
        raise
    except FileNotFoundError:
        raise QualityRefError(f"{path}: no such file") from None
    except FileArgError as exc:
        raise QualityRefError(f"{path}: {exc}") from None
    except (OSError, UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise QualityRefError(f"{path}: cannot read a reference: {exc}") from None
    if isinstance(doc, dict) and doc.get("schema") in (SCHEMA, SCHEMA_FROM_START):
        return Reference.from_dict(doc, f"{path}: reference")
    variants = doc.get("variants") if isinstance(doc, dict) else None
    for i, v in enumerate(variants if isinstance(variants, list) else []):
        if isinstance(v, dict) and "quality_reference" in v:
            return Reference.from_dict(v["quality_reference"], f"{path}: variants[{i}].quality_reference")
    raise QualityRefError(
        f"{path}: no quality reference here (expected a {FILE_NAME} or a results file of `bench --quality`)"
    )


def _base_reference(path: Path, positions: int) -> Reference:
    """The reference in a llama-perplexity `--kl-divergence-base` file: its first windows, each
    position listed as a measured baseline lists it (the adaptive top-K)."""
    try:
        base = read_base_file(path)
        windows = min(base.chunks, windows_for(positions, base.window))
        listed = base_positions(base, windows, TARGET_MASS, DEFAULT_TOP_K, MAX_TOP_K)
    except BaseFileError as exc:
        raise QualityRefError(str(exc)) from None
    return Reference(
        label=path.name,
        model=None,
        kind=BASE_KIND,
        text=f"the token ids in {path.name}",
        text_sha256=None,
        tokens=base.tokens[: windows * base.window],
        top_k=max(len(p.top) for p in listed),
        positions=tuple(listed),
        convention=LLAMA_PERPLEXITY,
        window=base.window,
        bos=None,
        bos_known=False,
        n_vocab=base.n_vocab,
    )
