# mypy: ignore-errors
"""Write a tiny random-weight Llama in Hugging Face format, and its precision variants, offline.

This file runs under the vLLM venv's Python (it needs torch, transformers and safetensors, which
precmon's own environment does not have): `vllm_model.py` runs it as a script, by path, so it
imports nothing from precmon. The weights are random (fixed seed): the text is gibberish, the
arithmetic per token is that of a real Llama of this shape, which is what speed measures.

The quantized variants are written by hand in the formats vLLM loads, with no calibration and no
download: W8A8 int8 in compressed-tensors' `int-quantized` format (per-channel symmetric int8
weights, dynamic per-token int8 activations), and AWQ int4 in AutoAWQ's GEMM layout (4-bit
weights with zero points, groups of 128 input rows, eight nibbles per int32 in AWQ's order).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np
import torch
from safetensors.torch import save_file
from tokenizers.processors import TemplateProcessing
from transformers import AutoTokenizer, LlamaConfig, LlamaForCausalLM

SHAPE = dict(
    vocab_size=32000,
    hidden_size=256,
    intermediate_size=768,
    num_hidden_layers=4,
    num_attention_heads=4,
    num_key_value_heads=4,
    max_position_embeddings=2048,
    rms_norm_eps=1e-5,
    bos_token_id=1,
    eos_token_id=2,
    tie_word_embeddings=False,
)
LINEARS = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")
AWQ_GROUP = 128
AWQ_ORDER = (0, 2, 4, 6, 1, 3, 5, 7)  # nibble i of an int32 holds output column AWQ_ORDER[i]
# Llama-2's chat layout; vLLM's chat endpoint tokenizes the rendered text without adding BOS.
CHAT_TEMPLATE = (
    "{{ bos_token }}{% for m in messages %}{% if m['role'] == 'system' %}<<SYS>>\n{{ m['content'] }}\n<</SYS>>\n\n"
    "{% elif m['role'] == 'user' %}[INST] {{ m['content'] }} [/INST]"
    "{% else %} {{ m['content'] }}{{ eos_token }}{% endif %}{% endfor %}"
)
VARIANTS = ("bf16", "fp16", "w8a8-int8", "awq-int4")


def say(msg: str) -> None:
    print(f"[precmon testbed] {msg}", file=sys.stderr, flush=True)


def write_tokenizer(vocab: Path, out: Path) -> None:
    """The SPM tokenizer of llama.cpp's vocab-only GGUF, with BOS prepended to every encoding."""
    tok = AutoTokenizer.from_pretrained(str(vocab.parent), gguf_file=vocab.name)
    bos = tok.convert_tokens_to_ids("<s>")
    tok.backend_tokenizer.post_processor = TemplateProcessing(
        single="<s> $A:0", pair="<s> $A:0 <s> $B:1", special_tokens=[("<s>", bos)]
    )
    tok.chat_template = CHAT_TEMPLATE
    tok.save_pretrained(str(out))
    # Load the tokenizer as vLLM will (from the folder, its own class); the generic class keeps
    # tokenizer.json's post-processor instead of rebuilding one from add_bos_token.
    cfg_path = out / "tokenizer_config.json"
    cfg = json.loads(cfg_path.read_text())
    cfg["tokenizer_class"] = "PreTrainedTokenizerFast"
    cfg["add_bos_token"] = True
    cfg_path.write_text(json.dumps(cfg, indent=2))
    ids = AutoTokenizer.from_pretrained(str(out)).encode("Hello world")
    if not ids or ids[0] != bos:
        raise SystemExit(f"tokenizer in {out} adds no BOS: 'Hello world' -> {ids[:8]}")


def _config(dtype: str, quantization: dict | None) -> dict:
    cfg = LlamaConfig(**SHAPE).to_dict()
    cfg.update(architectures=["LlamaForCausalLM"], model_type="llama", torch_dtype=dtype, dtype=dtype)
    if quantization:
        cfg["quantization_config"] = quantization
    return cfg


def _is_linear(name: str) -> bool:
    return name.endswith(".weight") and name.split(".")[-2] in LINEARS


def int8_channel(w: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Symmetric per-output-channel int8: w ≈ q * scale, scale of shape [out, 1]."""
    scale = (w.abs().amax(dim=1, keepdim=True) / 127.0).clamp(min=1e-8)
    q = torch.round(w / scale).clamp(-128, 127).to(torch.int8)
    return q, scale


def _pack_awq(q: np.ndarray) -> np.ndarray:
    """[rows, cols] values 0..15 → [rows, cols/8] int32, nibbles in AWQ's interleaved order."""
    rows, cols = q.shape
    groups = q.reshape(rows, cols // 8, 8).astype(np.uint32)
    packed = np.zeros((rows, cols // 8), dtype=np.uint32)
    for i, col in enumerate(AWQ_ORDER):
        packed |= groups[:, :, col] << np.uint32(4 * i)
    return packed.view(np.int32)


def awq_int4(w: torch.Tensor) -> dict[str, torch.Tensor]:
    """Asymmetric 4-bit, groups of AWQ_GROUP input rows: qweight, qzeros, scales (AWQ GEMM layout)."""
    wt = w.t().contiguous().float()  # [in, out]
    n_in, n_out = wt.shape
    g = wt.reshape(n_in // AWQ_GROUP, AWQ_GROUP, n_out)
    lo, hi = g.amin(dim=1), g.amax(dim=1)  # [groups, out]
    scales = ((hi - lo) / 15.0).clamp(min=1e-6)
    zeros = torch.round(-lo / scales).clamp(0, 15)
    q = torch.round(g / scales[:, None, :] + zeros[:, None, :]).clamp(0, 15).reshape(n_in, n_out)
    return {
        "qweight": torch.from_numpy(_pack_awq(q.to(torch.int64).numpy())),
        "qzeros": torch.from_numpy(_pack_awq(zeros.to(torch.int64).numpy())),
        "scales": scales.to(torch.float16),
    }


def variant_tensors(variant: str, state: dict[str, torch.Tensor]) -> tuple[dict[str, torch.Tensor], dict]:
    """Tensors and config.json of one variant, from the fp32 state dict."""
    if variant in ("bf16", "fp16"):
        dt = torch.bfloat16 if variant == "bf16" else torch.float16
        return {k: v.to(dt) for k, v in state.items()}, _config("bfloat16" if variant == "bf16" else "float16", None)
    if variant == "w8a8-int8":
        out: dict[str, torch.Tensor] = {}
        for k, v in state.items():
            if _is_linear(k):
                q, scale = int8_channel(v)
                out[k], out[k + "_scale"] = q, scale.to(torch.bfloat16)
            else:
                out[k] = v.to(torch.bfloat16)
        args_w = dict(num_bits=8, type="int", symmetric=True, strategy="channel", dynamic=False)
        args_a = dict(num_bits=8, type="int", symmetric=True, strategy="token", dynamic=True)
        quant = {
            "quant_method": "compressed-tensors",
            "format": "int-quantized",
            "quantization_status": "compressed",
            "config_groups": {"group_0": {"targets": ["Linear"], "weights": args_w, "input_activations": args_a}},
            "ignore": ["lm_head"],
        }
        return out, _config("bfloat16", quant)
    if variant == "awq-int4":
        out = {}
        for k, v in state.items():
            if _is_linear(k):
                base = k[: -len(".weight")]
                out.update({f"{base}.{n}": t for n, t in awq_int4(v).items()})
            else:
                out[k] = v.to(torch.float16)
        quant = {"quant_method": "awq", "bits": 4, "group_size": AWQ_GROUP, "zero_point": True, "version": "gemm"}
        return out, _config("float16", quant)
    raise SystemExit(f"unknown variant {variant!r}; known: {', '.join(VARIANTS)}")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description="Write the tiny HF Llama's precision variants into OUT/<variant>/.")
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--vocab", type=Path, required=True, help="llama.cpp's ggml-vocab-llama-spm.gguf")
    p.add_argument("--variants", default=",".join(VARIANTS))
    p.add_argument("--seed", type=int, default=0)
    a = p.parse_args(argv)
    started = time.monotonic()
    tok_dir = a.out / "tokenizer"
    tok_dir.mkdir(parents=True, exist_ok=True)
    write_tokenizer(a.vocab, tok_dir)
    torch.manual_seed(a.seed)
    state = {k: v.detach().clone().contiguous() for k, v in LlamaForCausalLM(LlamaConfig(**SHAPE)).state_dict().items()}
    n_params = sum(v.numel() for v in state.values())
    for variant in a.variants.split(","):
        d = a.out / variant
        d.mkdir(parents=True, exist_ok=True)
        tensors, cfg = variant_tensors(variant, state)
        save_file({k: v.contiguous() for k, v in tensors.items()}, str(d / "model.safetensors"), {"format": "pt"})
        (d / "config.json").write_text(json.dumps(cfg, indent=2))
        for f in tok_dir.iterdir():
            (d / f.name).write_bytes(f.read_bytes())
        size = (d / "model.safetensors").stat().st_size
        elapsed_s = time.monotonic() - started
        say(f"wrote {variant} ({size / 2**20:.0f} MiB, {n_params / 1e6:.1f} M params) after {elapsed_s:.0f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
