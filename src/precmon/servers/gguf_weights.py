"""What a GGUF file's weights really are: the tensor-type mix and the effective bits per weight.

A file's name and its `general.file_type` say what it was asked to be, not what it holds:
llama-quantize falls back to another type where a row width does not fit the block (SmolLM2's
576-wide Q4_K_M is mostly Q5_0), and a file made with `--tensor-type` overrides is named by its
base type (an NVFP4 file says Q8_0). The tensor table in the header says what is there.

Only the header is read (keys skipped, then the tensor table): a few hundred kilobytes of an
8 GB file, no numpy. The type table is ggml's ABI (`ggml.h` `enum ggml_type`); a test checks it
against the `gguf` package's own.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

#: ggml type id -> (name, elements per block, bytes per block)
GGML_TYPES: dict[int, tuple[str, int, int]] = {
    0: ("F32", 1, 4), 1: ("F16", 1, 2), 2: ("Q4_0", 32, 18), 3: ("Q4_1", 32, 20), 6: ("Q5_0", 32, 22),
    7: ("Q5_1", 32, 24), 8: ("Q8_0", 32, 34), 9: ("Q8_1", 32, 40), 10: ("Q2_K", 256, 84), 11: ("Q3_K", 256, 110),
    12: ("Q4_K", 256, 144), 13: ("Q5_K", 256, 176), 14: ("Q6_K", 256, 210), 15: ("Q8_K", 256, 292),
    16: ("IQ2_XXS", 256, 66), 17: ("IQ2_XS", 256, 74), 18: ("IQ3_XXS", 256, 98), 19: ("IQ1_S", 256, 50),
    20: ("IQ4_NL", 32, 18), 21: ("IQ3_S", 256, 110), 22: ("IQ2_S", 256, 82), 23: ("IQ4_XS", 256, 136),
    24: ("I8", 1, 1), 25: ("I16", 1, 2), 26: ("I32", 1, 4), 27: ("I64", 1, 8), 28: ("F64", 1, 8),
    29: ("IQ1_M", 256, 56), 30: ("BF16", 1, 2), 34: ("TQ1_0", 256, 54), 35: ("TQ2_0", 256, 66),
    39: ("MXFP4", 32, 17), 40: ("NVFP4", 64, 36), 41: ("Q1_0", 128, 18),
}  # fmt: skip
#: `general.file_type` (llama.cpp `enum llama_ftype`) -> the name llama.cpp prints
FILE_TYPES: dict[int, str] = {
    0: "F32", 1: "F16", 2: "Q4_0", 3: "Q4_1", 7: "Q8_0", 8: "Q5_0", 9: "Q5_1", 10: "Q2_K", 11: "Q3_K_S",
    12: "Q3_K_M", 13: "Q3_K_L", 14: "Q4_K_S", 15: "Q4_K_M", 16: "Q5_K_S", 17: "Q5_K_M", 18: "Q6_K",
    19: "IQ2_XXS", 20: "IQ2_XS", 21: "Q2_K_S", 22: "IQ3_XS", 23: "IQ3_XXS", 24: "IQ1_S", 25: "IQ4_NL",
    26: "IQ3_S", 27: "IQ3_M", 28: "IQ2_S", 29: "IQ2_M", 30: "IQ4_XS", 31: "IQ1_M", 32: "BF16",
    36: "TQ1_0", 37: "TQ2_0", 38: "MXFP4_MOE", 39: "NVFP4", 40: "Q1_0",
}  # fmt: skip
#: Types that hold no quantized weights (norms, biases): left out of "the weights' type".
PLAIN = frozenset({"F32", "F64", "I8", "I16", "I32", "I64"})
MAX_COUNT = 1 << 24  # more keys, tensors, dims or array items than any real file: a corrupt header
MAX_STRING = 1 << 26
NAME_CHARS = 200  # of `general.name` kept
_SCALAR = {0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8}  # GGUF value type -> bytes
_STRING, _ARRAY = 8, 9


class GGUFError(ValueError):
    """Not a GGUF file this reader understands (one line naming the file and what was wrong)."""


@dataclass(frozen=True)
class WeightMix:
    """The weights of one GGUF file.

    Attributes:
        tensors: type name -> number of tensors of that type (norms included, as F32).
        weight_bytes: type name -> bytes of tensor data of that type.
        bits_per_weight: all tensor bytes x 8 / all elements (llama.cpp's "BPW").
        file_type: what `general.file_type` says (None where absent).
        main_type: the quantized type holding most of the bytes (F16/BF16 for an unquantized file).
        name: the file's own `general.name` (where the ladder says what a rung was made from).
    """

    tensors: dict[str, int]
    weight_bytes: dict[str, int]
    bits_per_weight: float
    file_type: str | None
    main_type: str | None
    name: str | None = None  # `general.name`, as the file says (untrusted text)
    architecture: str | None = None  # `general.architecture` ("llama"): llama-bench's model column starts with it

    def share(self, type_name: str) -> float:
        """The share of the weight bytes (norms excluded) held by `type_name`."""
        total = sum(b for t, b in self.weight_bytes.items() if t not in PLAIN)
        return self.weight_bytes.get(type_name, 0) / total if total else 0.0

    def to_dict(self) -> dict[str, object]:
        return {
            "tensors": {t.lower(): n for t, n in sorted(self.tensors.items(), key=lambda kv: -kv[1])},
            "bits_per_weight": round(self.bits_per_weight, 3),
            "file_type": self.file_type,
            "main_type": self.main_type,
            **({"name": self.name} if self.name else {}),
            **({"architecture": self.architecture} if self.architecture else {}),
        }


class _Header:
    def __init__(self, f: BinaryIO, name: str) -> None:
        self.f, self.name = f, name

    def take(self, n: int) -> bytes:
        b = self.f.read(n)
        if len(b) != n:
            raise GGUFError(f"{self.name}: the GGUF header ends early")
        return b

    def u32(self) -> int:
        return int(struct.unpack("<I", self.take(4))[0])

    def u64(self) -> int:
        return int(struct.unpack("<Q", self.take(8))[0])

    def count(self, what: str) -> int:
        n = self.u64()
        if n > MAX_COUNT:
            raise GGUFError(f"{self.name}: {n} {what} in the header: not a GGUF file precmon can read")
        return n

    def string(self) -> str:
        n = self.u64()
        if n > MAX_STRING:
            raise GGUFError(f"{self.name}: a {n}-byte string in the header: corrupt")
        return self.take(n).decode("utf-8", errors="replace")

    def skip_value(self, vtype: int) -> None:
        if vtype in _SCALAR:
            self.take(_SCALAR[vtype])
        elif vtype == _STRING:
            self.string()
        elif vtype == _ARRAY:
            itype, n = self.u32(), self.count("array items")
            if itype in _SCALAR:
                self.take(_SCALAR[itype] * n)
            else:
                for _ in range(n):
                    self.skip_value(itype)
        else:
            raise GGUFError(f"{self.name}: unknown GGUF value type {vtype}")


def read_weights(path: Path | str) -> WeightMix:
    """The tensor-type mix of a GGUF file; GGUFError (one line) for anything else."""
    path = Path(path)
    try:
        with open(path, "rb") as f:
            return _read(_Header(f, path.name))
    except OSError as exc:
        raise GGUFError(f"cannot read {path}: {exc.strerror or exc}") from None


def _read(h: _Header) -> WeightMix:
    if h.take(4) != b"GGUF":
        raise GGUFError(f"{h.name}: not a GGUF file (no GGUF magic)")
    version = h.u32()
    if version < 2:
        raise GGUFError(f"{h.name}: GGUF version {version} is too old (2 or later)")
    n_tensors, n_kv = h.count("tensors"), h.count("keys")
    file_type: str | None = None
    model_name: str | None = None
    architecture: str | None = None
    for _ in range(n_kv):
        key, vtype = h.string(), h.u32()
        if key == "general.file_type" and vtype in (4, 5):
            code = h.u32()
            file_type = FILE_TYPES.get(code, f"file type {code}")
        elif key == "general.name" and vtype == _STRING:
            model_name = h.string()[:NAME_CHARS]
        elif key == "general.architecture" and vtype == _STRING:
            architecture = h.string()[:NAME_CHARS]
        else:
            h.skip_value(vtype)
    tensors: dict[str, int] = {}
    nbytes: dict[str, int] = {}
    elements = total_bytes = 0
    for _ in range(n_tensors):
        h.string()
        dims = [h.u64() for _ in range(min(h.u32(), 8))]
        tid = h.u32()
        h.u64()  # data offset
        name, block, size = GGML_TYPES.get(tid, (f"type {tid}", 0, 0))
        n = 1
        for d in dims:
            n *= d
        tensors[name] = tensors.get(name, 0) + 1
        b = n // block * size if block else 0
        nbytes[name] = nbytes.get(name, 0) + b
        elements += n
        total_bytes += b
    quantized = {t: b for t, b in nbytes.items() if t not in PLAIN}
    main = max(quantized, key=lambda t: quantized[t]) if quantized else None
    bpw = total_bytes * 8 / elements if elements else 0.0
    return WeightMix(tensors, nbytes, bpw, file_type, main, model_name, architecture)
