"""servers/gguf_weights.py reads what a GGUF file's weights really are (design §9 "True labels")."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest
from gguf.constants import GGML_QUANT_SIZES, GGMLQuantizationType, LlamaFileType

from precmon.servers.gguf_weights import FILE_TYPES, GGML_TYPES, GGUFError, read_weights


def test_the_type_tables_are_ggmls():
    assert {t.value: (t.name, *GGML_QUANT_SIZES[t]) for t in GGMLQuantizationType} == GGML_TYPES
    theirs = {f.value: f.name.removeprefix("MOSTLY_").removeprefix("ALL_") for f in LlamaFileType if f.value < 1024}
    assert theirs == FILE_TYPES


def s(text: str) -> bytes:
    b = text.encode()
    return struct.pack("<Q", len(b)) + b


def header(kv: list[bytes], tensors: list[tuple[str, list[int], int]], n_kv: int | None = None) -> bytes:
    out = b"GGUF" + struct.pack("<IQQ", 3, len(tensors), len(kv) if n_kv is None else n_kv) + b"".join(kv)
    for name, dims, tid in tensors:
        out += s(name) + struct.pack("<I", len(dims)) + b"".join(struct.pack("<Q", d) for d in dims)
        out += struct.pack("<IQ", tid, 0)
    return out


FILE_TYPE_Q8_0 = s("general.file_type") + struct.pack("<II", 4, 7)
VOCAB = s("tokenizer.ggml.tokens") + struct.pack("<IIQ", 9, 8, 3) + s("a") + s("bb") + s("<s>")
SCORES = s("tokenizer.ggml.scores") + struct.pack("<IIQ", 9, 6, 2) + struct.pack("<ff", 0.5, 1.5)


def test_a_file_named_by_its_base_type_shows_what_it_holds(tmp_path):
    """An NVFP4 file made with --tensor-type over base Q8_0: the header says Q8_0, the tensors NVFP4."""
    f = tmp_path / "m.gguf"
    tensors = [("blk.0.attn_q.weight", [64, 64], 40), ("blk.0.ffn_up.weight", [64, 128], 40)]
    tensors += [("token_embd.weight", [64, 32], 8), ("output_norm.weight", [64], 0)]
    f.write_bytes(header([VOCAB, FILE_TYPE_Q8_0, SCORES], tensors))
    w = read_weights(f)
    assert w.file_type == "Q8_0" and w.main_type == "NVFP4"
    assert w.tensors == {"NVFP4": 2, "Q8_0": 1, "F32": 1}
    nv, q8, norm = (4096 + 8192) // 64 * 36, 2048 // 32 * 34, 64 * 4
    assert w.weight_bytes == {"NVFP4": nv, "Q8_0": q8, "F32": norm}
    assert w.bits_per_weight == pytest.approx((nv + q8 + norm) * 8 / (4096 + 8192 + 2048 + 64))
    assert w.share("NVFP4") == pytest.approx(nv / (nv + q8))
    assert w.to_dict()["tensors"] == {"nvfp4": 2, "q8_0": 1, "f32": 1}


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"GGML" + bytes(20), "m.gguf: not a GGUF file (no GGUF magic)"),
        (b"GGUF" + struct.pack("<I", 1) + bytes(16), "m.gguf: GGUF version 1 is too old"),
        (b"GGUF" + struct.pack("<IQQ", 3, 1 << 40, 0), "m.gguf: 1099511627776 tensors in the header"),
        (header([FILE_TYPE_Q8_0], [], n_kv=2), "m.gguf: the GGUF header ends early"),
        (header([s("k") + struct.pack("<I", 99)], []), "m.gguf: unknown GGUF value type 99"),
    ],
)
def test_a_bad_header_is_one_line_naming_the_file(tmp_path, data, message):
    f = tmp_path / "m.gguf"
    f.write_bytes(data)
    with pytest.raises(GGUFError, match=message.replace("(", r"\(").replace(")", r"\)")):
        read_weights(f)


def test_a_missing_file_is_one_line():
    with pytest.raises(GGUFError, match="cannot read /nonexistent/m.gguf: No such file"):
        read_weights(Path("/nonexistent/m.gguf"))


def test_the_files_own_name_is_read_and_kept_short(tmp_path):
    f = tmp_path / "n.gguf"
    name = s("general.name") + struct.pack("<I", 8) + s("SmolLM2 NVFP4 " + "x" * 500)
    f.write_bytes(header([VOCAB, name, FILE_TYPE_Q8_0], [("blk.0.attn_q.weight", [64, 64], 40)]))
    w = read_weights(f)
    assert w.name is not None and w.name.startswith("SmolLM2 NVFP4 x") and len(w.name) == 200
    assert w.to_dict()["name"] == w.name and w.file_type == "Q8_0"
