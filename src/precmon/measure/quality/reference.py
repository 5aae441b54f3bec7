"""The baseline's distributions, saved so later variants score against them (docs/design.md §4).

A sweep's launch-mode variants run with the baseline's server stopped, `--resume` runs in a new
process and `bench --quality-ref` on another day: all of them need the baseline's top-K lists
without the baseline. `quality-ref.json` in the out dir (schema `precmon.quality_ref/1`) holds
them; `bench --quality` stores the same object in its results JSON under the variant's
`quality_reference`. A reference is read as untrusted input: one line naming the file and field.
"""

from __future__ import annotations

import hashlib
import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from precmon.core.settings import MAX_QUALITY_POSITIONS, QUALITY_TOP_K_MAX
from precmon.file_args import FileArgError, open_file_arg
from precmon.measure.quality.score import Position
from precmon.measure.results import write_json_atomic
from precmon.untrusted import visible

SCHEMA = "precmon.quality_ref/1"
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
        text_sha256: of the text, so a reference is never used with another text.
        tokens: the token ids of positions 0 … P (P + 1 ids: each position predicts the next).
        top_k: K asked for.
        positions: P positions.
    """

    label: str
    model: str | None
    kind: str
    text: str
    text_sha256: str
    tokens: tuple[int, ...]
    top_k: int
    positions: tuple[Position, ...]

    def to_dict(self) -> dict[str, Any]:
        return {
            "schema": SCHEMA,
            "label": self.label,
            "model": self.model,
            "kind": self.kind,
            "text": self.text,
            "text_sha256": self.text_sha256,
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
        if d.get("schema") != SCHEMA:
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
        if len(tokens) != len(raw_positions) + 1:
            raise QualityRefError(
                f"{where}.tokens: {len(tokens)} ids for {len(raw_positions)} positions (expected one more)"
            )
        positions = tuple(_position(p, f"{where}.positions[{i}]", top_k) for i, p in enumerate(raw_positions))
        return cls(d["label"], model, d["kind"], d["text"], d["text_sha256"], tuple(tokens), top_k, positions)


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


def load_reference(path: Path) -> Reference:
    """A reference from a `quality-ref.json`, or from a results JSON whose variant carries
    `quality_reference` (the first such variant).

    Raises:
        QualityRefError: one line naming the file and what is wrong.
    """
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
    if isinstance(doc, dict) and doc.get("schema") == SCHEMA:
        return Reference.from_dict(doc, f"{path}: reference")
    variants = doc.get("variants") if isinstance(doc, dict) else None
    for i, v in enumerate(variants if isinstance(variants, list) else []):
        if isinstance(v, dict) and "quality_reference" in v:
            return Reference.from_dict(v["quality_reference"], f"{path}: variants[{i}].quality_reference")
    raise QualityRefError(
        f"{path}: no quality reference here (expected a {FILE_NAME} or a results file of `bench --quality`)"
    )
