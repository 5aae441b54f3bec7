"""The base file of `llama-perplexity --kl-divergence-base` read as a quality reference.

llama-perplexity (tools/perplexity/perplexity.cpp, `perplexity` writes it, `kl_divergence` reads it)
saves the baseline's full next-token distributions so a later run can score a quantized file
against them. Its layout, native-endian (little on every machine llama.cpp builds for):

    "_logits_"                                  8 bytes
    n_ctx, n_vocab, n_chunk                     int32 each
    tokens                                      n_chunk × n_ctx int32: the text's ids, chunk by
                                                chunk (the first of each chunk as tokenized, not
                                                the BOS the model was given in its place)
    then per chunk, per scored position         (n_ctx − 1 − n_ctx/2) rows of nv = 2⌈n_vocab/2⌉ + 4
    (the chunk's second half)                   uint16: the first four are two float32, `scale`
                                                and `min_log_prob`, then one value v per token:
                                                log p = scale × v + min_log_prob (v = 0: at or below
                                                the floor, 16 nats under the top logit)

That is precmon's "llama-perplexity" convention (measure/quality/windows.py) with a window of
n_ctx: row r of chunk c is the distribution after the chunk's tokens 0 … n_ctx/2 + r, predicting
token n_ctx/2 + r + 1. A Reference made from it lists at each position the fewest tokens holding
the adaptive target of the probability (measure/quality/adaptive.py), as a measured baseline
does, and the own token's log-probability. The file carries no text, only token ids: the text a
variant is scored on must tokenize to the same ids (checked when it is scored). Every byte is
untrusted: a wrong size, an id outside the vocabulary or a non-finite scale is a one-line error.
"""

from __future__ import annotations

import math
import struct
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from precmon.file_args import FileArgError, open_file_arg
from precmon.measure.quality.score import Position

MAGIC = b"_logits_"
HEADER_BYTES = len(MAGIC) + 3 * 4
#: Sanity bounds on the header (a wrong file is refused before anything large is read).
MAX_CTX = 1 << 20
MAX_VOCAB = 10_000_000
KIND = "llama-perplexity"


class BaseFileError(ValueError):
    """The file is not a usable llama-perplexity base file; str() is one line naming it."""


def is_base_file(path: Path) -> bool:
    """Whether `path` starts with llama-perplexity's magic (a cheap test before JSON is tried)."""
    try:
        with open_file_arg(path) as f:  # a FIFO is refused, never waited on
            return f.read(len(MAGIC)) == MAGIC
    except (OSError, FileArgError):
        return False


@dataclass(frozen=True)
class BaseFile:
    """The header of a base file and where its rows are.

    Attributes:
        path: the file.
        window: n_ctx, the tokens of each chunk (its `-c`).
        n_vocab: the vocabulary size of the model that wrote it.
        chunks: how many chunks it holds.
        tokens: the ids of all chunks, chunk after chunk.
    """

    path: Path
    window: int
    n_vocab: int
    chunks: int
    tokens: tuple[int, ...]

    @property
    def first(self) -> int:
        """The first scored position of a chunk."""
        return self.window // 2

    @property
    def rows_per_chunk(self) -> int:
        return self.window - 1 - self.first

    @property
    def row_values(self) -> int:
        """uint16 values per row: the two floats, then the vocabulary padded to even."""
        return 2 * ((self.n_vocab + 1) // 2) + 4

    @property
    def data_offset(self) -> int:
        return HEADER_BYTES + 4 * len(self.tokens)

    def expected_bytes(self) -> int:
        return self.data_offset + 2 * self.chunks * self.rows_per_chunk * self.row_values

    def chunk_logprobs(self, chunk: int) -> np.ndarray:
        """(rows_per_chunk, n_vocab) float32 log-probabilities of chunk `chunk`'s scored positions.

        Raises:
            BaseFileError: a row's scale or floor is not a finite number, or its values would
                give a log-probability above 0.
        """
        n = self.rows_per_chunk * self.row_values
        offset = self.data_offset + 2 * chunk * n
        raw = np.fromfile(self.path, dtype="<u2", count=n, offset=offset).reshape(self.rows_per_chunk, -1)
        heads = raw[:, :4].copy().view("<f4")  # (rows, 2): scale, min_log_prob
        scale, floor = heads[:, 0:1].astype(np.float64), heads[:, 1:2].astype(np.float64)
        if not (np.isfinite(scale).all() and np.isfinite(floor).all()) or (scale < 0).any():
            raise BaseFileError(f"{self.path}: chunk {chunk} has a row whose scale or floor is not a finite number")
        logp = scale * raw[:, 4 : 4 + self.n_vocab] + floor
        if float(logp.max(initial=-math.inf)) > 0.01:
            raise BaseFileError(f"{self.path}: chunk {chunk} gives a log-probability above 0: not a base file")
        return np.minimum(logp, 0.0).astype(np.float32)


def read_base_file(path: Path) -> BaseFile:
    """The header and token ids of a llama-perplexity base file, checked against its size.

    Raises:
        BaseFileError: one line naming the file and what is wrong.
    """
    try:
        size = path.stat().st_size
        with open_file_arg(path) as f:
            head = f.read(HEADER_BYTES)
            if len(head) < HEADER_BYTES or head[: len(MAGIC)] != MAGIC:
                raise BaseFileError(f"{path}: not a llama-perplexity --kl-divergence-base file")
            window, n_vocab, chunks = struct.unpack("<iii", head[len(MAGIC) :])
            if not (4 <= window <= MAX_CTX and 1 <= n_vocab <= MAX_VOCAB and chunks >= 1):
                raise BaseFileError(
                    f"{path}: header says n_ctx {window}, n_vocab {n_vocab}, {chunks} chunks: not a base file"
                )
            if HEADER_BYTES + 4 * window * chunks > size:
                raise BaseFileError(f"{path}: {size} bytes, too short for its {chunks} chunks of {window} tokens")
            ids = np.frombuffer(f.read(4 * window * chunks), dtype="<i4")
    except FileArgError as exc:
        raise BaseFileError(f"{path}: {exc}") from None
    except OSError as exc:
        raise BaseFileError(f"{path}: cannot read: {exc.strerror or exc}") from None
    if ids.size and (int(ids.min()) < 0 or int(ids.max()) >= n_vocab):
        raise BaseFileError(f"{path}: a token id outside its vocabulary of {n_vocab}")
    base = BaseFile(path, window, n_vocab, chunks, tuple(int(t) for t in ids))
    if size != base.expected_bytes():
        raise BaseFileError(
            f"{path}: {size} bytes where n_ctx {window}, n_vocab {n_vocab} and {chunks} chunks make "
            f"{base.expected_bytes()}: truncated or not a base file"
        )
    return base


def base_positions(base: BaseFile, windows: int, target_mass: float, k_min: int, k_max: int) -> list[Position]:
    """The first `windows` chunks' positions as a measured baseline lists them: per position the
    fewest most probable tokens holding `target_mass` (at least `k_min`, at most `k_max`), and
    the text's own next token's log-probability."""
    out: list[Position] = []
    for c in range(windows):
        logp = base.chunk_logprobs(c)
        k = min(k_max, base.n_vocab)
        if k < base.n_vocab:
            top = np.argpartition(-logp, k - 1, axis=1)[:, :k]
        else:
            top = np.tile(np.arange(k), (len(logp), 1))
        for r in range(logp.shape[0]):
            ids = top[r][np.lexsort((top[r], -logp[r, top[r]]))]  # most probable first, ties to the lower id
            lps = logp[r, ids].astype(np.float64)
            mass = np.cumsum(np.exp(lps))
            keep = max(k_min, min(int(np.searchsorted(mass, target_mass)) + 1, k))
            own = base.tokens[c * base.window + base.first + r + 1]
            pairs = tuple((int(t), float(lp)) for t, lp in zip(ids[:keep], lps[:keep], strict=True))
            out.append(Position(pairs, float(logp[r, own])))
    return out
