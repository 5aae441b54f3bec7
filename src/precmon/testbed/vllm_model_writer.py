# mypy: ignore-errors
"""Write a Llama in Hugging Face format, and its precision variants, offline: a real one or a tiny one.

This file runs under the vLLM venv's Python (it needs torch, transformers, gguf and safetensors,
which precmon's own environment does not have): `vllm_model.py` runs it as a script, by path, so
it imports nothing from precmon.

Two sources. `--gguf FILE`: a real model's GGUF (the test bed's SmolLM2-135M-Instruct release),
read with transformers' own GGUF loader, which dequantizes every tensor to fp32 and undoes
llama.cpp's Q/K row permutation; its config and tokenizer come from the same file, and the
writer checks the weights by their answer ("The capital of France is" -> " Paris") before it
writes anything. `--vocab FILE`: a tiny random-weight Llama (fixed seed) with llama.cpp's SPM
test vocabulary: gibberish text, the arithmetic per token of a real Llama of its shape.

The quantized variants are written by hand in the formats vLLM loads, by round-to-nearest from
the fp32 weights, with no calibration and no download: W8A8 int8 in compressed-tensors'
`int-quantized` format (per-channel symmetric int8 weights, dynamic per-token int8 activations),
and int4 in AutoAWQ's GEMM layout (4-bit weights with zero points, groups of 128 input rows, or
64 where a layer's width does not divide by 128, eight nibbles per int32 in AWQ's order). The
int4 is AWQ's *format*, not AWQ's activation-aware search: its quality is plain round-to-nearest's.
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
from transformers import AutoConfig, AutoTokenizer, LlamaConfig, LlamaForCausalLM

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
AWQ_GROUPS = (128, 64, 32)  # the first that divides every linear layer's input width (SmolLM2's 576: 64)
AWQ_ORDER = (0, 2, 4, 6, 1, 3, 5, 7)  # nibble i of an int32 holds output column AWQ_ORDER[i]
# Llama-2's chat layout; vLLM's chat endpoint tokenizes the rendered text without adding BOS.
CHAT_TEMPLATE = (
    "{{ bos_token }}{% for m in messages %}{% if m['role'] == 'system' %}<<SYS>>\n{{ m['content'] }}\n<</SYS>>\n\n"
    "{% elif m['role'] == 'user' %}[INST] {{ m['content'] }} [/INST]"
    "{% else %} {{ m['content'] }}{{ eos_token }}{% endif %}{% endfor %}"
)
VARIANTS = ("bf16", "fp16", "w8a8-int8", "awq-int4")
# What a real model's dequantized weights must answer, greedy, before anything is written.
CHECK_PROMPT, CHECK_WORD = "The capital of France is", " Paris"


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


def tiny_model(vocab: Path, tok_dir: Path, seed: int) -> tuple[dict[str, torch.Tensor], dict]:
    """(fp32 state dict, config dict) of the random-weight Llama of SHAPE; its tokenizer into `tok_dir`."""
    write_tokenizer(vocab, tok_dir)
    torch.manual_seed(seed)
    model = LlamaForCausalLM(LlamaConfig(**SHAPE))
    return {k: v.detach().clone().contiguous() for k, v in model.state_dict().items()}, LlamaConfig(**SHAPE).to_dict()


def gguf_model(gguf: Path, tok_dir: Path) -> tuple[dict[str, torch.Tensor], dict]:
    """(fp32 state dict, config dict) of a Llama GGUF; its tokenizer (with chat template) into `tok_dir`.

    transformers' `from_pretrained(gguf_file=…)` needs `accelerate` (not in the vLLM venv); its
    loader underneath does not: it dequantizes, renames to Hugging Face's names and undoes the
    Q/K permutation llama.cpp's converter applied. The tokenizer keeps the GGUF's own rules (a
    GPT-2-style BPE adds no BOS), so it tokenizes as llama-server does.
    """
    from transformers.modeling_gguf_pytorch_utils import load_gguf_checkpoint

    cfg = AutoConfig.from_pretrained(str(gguf.parent), gguf_file=gguf.name)
    if cfg.model_type != "llama":
        raise SystemExit(f"{gguf.name} is a {cfg.model_type!r} model; this writer knows Llama's layers only")
    with torch.device("meta"):
        shell = LlamaForCausalLM(cfg)  # names only: the loader maps GGUF names onto its parameters
    names = set(shell.state_dict())
    tensors = load_gguf_checkpoint(str(gguf), return_tensors=True, model_to_load=shell)["tensors"]
    state = {k: torch.as_tensor(v).float().contiguous() for k, v in tensors.items()}
    tied = {"lm_head.weight"} if cfg.tie_word_embeddings else set()
    if missing := sorted(names - set(state) - tied):
        raise SystemExit(f"{gguf.name} lacks {len(missing)} tensors, e.g. {missing[:3]}")
    tok = AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name)
    tok.save_pretrained(str(tok_dir))
    return state, cfg.to_dict()


def check_answer(state: dict[str, torch.Tensor], cfg: dict, tok_dir: Path) -> str:
    """The weights' greedy continuation of CHECK_PROMPT (fp32, transformers); SystemExit unless CHECK_WORD.

    A wrong tensor name, a Q/K permutation left in or a transposed layer makes a model that
    loads and serves text; only what it says tells. This runs before anything is written.
    """
    tok = AutoTokenizer.from_pretrained(str(tok_dir))
    model = LlamaForCausalLM(LlamaConfig(**{k: v for k, v in cfg.items() if k != "dtype"}))
    model.load_state_dict(state, strict=False)
    model.tie_weights()
    model.eval()
    ids = tok(CHECK_PROMPT, return_tensors="pt").input_ids
    with torch.no_grad():
        out = model.generate(ids, max_new_tokens=3, do_sample=False, pad_token_id=tok.pad_token_id)
    text = tok.decode(out[0, ids.shape[1] :])
    if not text.startswith(CHECK_WORD):
        raise SystemExit(f"the dequantized weights continue {CHECK_PROMPT!r} with {text!r}, not {CHECK_WORD!r}")
    return text


def _config(base: dict, dtype: str, quantization: dict | None) -> dict:
    cfg = dict(base)
    cfg.update(architectures=["LlamaForCausalLM"], model_type="llama", torch_dtype=dtype, dtype=dtype)
    for key in ("_name_or_path", "_model_name_or_path"):  # the GGUF reader's general.name, not a path
        cfg.pop(key, None)
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


def awq_group(state: dict[str, torch.Tensor]) -> int:
    """The largest of AWQ_GROUPS that divides every linear layer's input width."""
    widths = {v.shape[1] for k, v in state.items() if _is_linear(k)}
    for g in AWQ_GROUPS:
        if all(w % g == 0 for w in widths):
            return g
    raise SystemExit(f"no AWQ group size of {AWQ_GROUPS} divides the input widths {sorted(widths)}")


def awq_int4(w: torch.Tensor, group: int) -> dict[str, torch.Tensor]:
    """Asymmetric 4-bit, groups of `group` input rows: qweight, qzeros, scales (AWQ GEMM layout)."""
    wt = w.t().contiguous().float()  # [in, out]
    n_in, n_out = wt.shape
    g = wt.reshape(n_in // group, group, n_out)
    lo, hi = g.amin(dim=1), g.amax(dim=1)  # [groups, out]
    scales = ((hi - lo) / 15.0).clamp(min=1e-6)
    zeros = torch.round(-lo / scales).clamp(0, 15)
    q = torch.round(g / scales[:, None, :] + zeros[:, None, :]).clamp(0, 15).reshape(n_in, n_out)
    return {
        "qweight": torch.from_numpy(_pack_awq(q.to(torch.int64).numpy())),
        "qzeros": torch.from_numpy(_pack_awq(zeros.to(torch.int64).numpy())),
        "scales": scales.to(torch.float16),
    }


def variant_tensors(variant: str, state: dict[str, torch.Tensor], base: dict) -> tuple[dict[str, torch.Tensor], dict]:
    """Tensors and config.json of one variant, from the fp32 state dict and the model's config."""
    if variant in ("bf16", "fp16"):
        name, dt = ("bfloat16", torch.bfloat16) if variant == "bf16" else ("float16", torch.float16)
        return {k: v.to(dt) for k, v in state.items()}, _config(base, name, None)
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
        return out, _config(base, "bfloat16", quant)
    if variant == "awq-int4":
        group = awq_group(state)
        out = {}
        for k, v in state.items():
            if _is_linear(k):
                stem = k[: -len(".weight")]
                out.update({f"{stem}.{n}": t for n, t in awq_int4(v, group).items()})
            else:
                out[k] = v.to(torch.float16)
        quant = {"quant_method": "awq", "bits": 4, "group_size": group, "zero_point": True, "version": "gemm"}
        return out, _config(base, "float16", quant)
    raise SystemExit(f"unknown variant {variant!r}; known: {', '.join(VARIANTS)}")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description="Write a HF Llama's precision variants into OUT/<variant>/.")
    p.add_argument("--out", type=Path, required=True)
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument("--gguf", type=Path, help="a real Llama's GGUF: its weights, config and tokenizer")
    src.add_argument("--vocab", type=Path, help="llama.cpp's ggml-vocab-llama-spm.gguf: the tiny random Llama")
    p.add_argument("--variants", default=",".join(VARIANTS))
    p.add_argument("--seed", type=int, default=0)
    a = p.parse_args(argv)
    started = time.monotonic()
    tok_dir = a.out / "tokenizer"
    tok_dir.mkdir(parents=True, exist_ok=True)
    if a.gguf is not None:
        state, base = gguf_model(a.gguf, tok_dir)
        said = check_answer(state, base, tok_dir)
        say(f"read {a.gguf.name} in {time.monotonic() - started:.0f} s; {CHECK_PROMPT!r} -> {said!r}")
    else:
        state, base = tiny_model(a.vocab, tok_dir, a.seed)
    n_params = sum(v.numel() for v in state.values())
    for variant in a.variants.split(","):
        d = a.out / variant
        d.mkdir(parents=True, exist_ok=True)
        tensors, cfg = variant_tensors(variant, state, base)
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
