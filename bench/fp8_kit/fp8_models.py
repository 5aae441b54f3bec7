#!/usr/bin/env python3
"""Issue 40 run 3: the models `transformers serve` serves in bf16 and FP8, its sweep files, and an
in-process quality check. Run from the repository root with PYTHONPATH=<wheels>:src (fp8_kit.sh does).

FP8 here is torchao's `Float8DynamicActivationFloat8WeightConfig(granularity=PerRow())`: every
nn.Linear's weight becomes float8_e4m3fn with one scale per output row, activations are quantized
per token at run time, and the product runs on `torch._scaled_mm` (SM 8.9+; no `mslk` package is
installed, so torchao picks the "torch" kernel). `transformers serve` has no flag for it
(`--quantization` takes only bnb-4bit/bnb-8bit), so the model is quantized once with
`from_pretrained(..., quantization_config=TorchAoConfig(...))` and written with `save_pretrained`:
its config.json then carries `quantization_config` (quant_method "torchao") and the safetensors
file torchao's flattened Float8Tensor, and the server's plain `from_pretrained(folder)` loads it
pre-quantized.

Subcommands:
  smollm2  --gguf Q4_1.gguf --out W/smollm2    bf16 (precmon's vLLM test-bed writer, checked by its
                                                answer) and fp8 folders
  synth8b  --tokenizer DIR --out W/synth8b      the GGUF ladder's 8 B shape (testbed/models.py SHAPES),
                                                random bf16 weights made on the GPU, and fp8
  quantize --src DIR --out DIR                  bf16 folder -> torchao FP8 folder
  sweep    --name smollm2|synth8b --models W/.. --out FILE [--profile h200|cpu]
  quality  --bf16 DIR --fp8 DIR --out FILE      teacher-forced KL(bf16 || fp8) in-process (NOT through
                                                the server, which returns no log-probabilities)
--cpu-test (quantize, smollm2, synth8b) skips torchao's hardware assertion so the save/load route can
be checked on a machine without an FP8 GPU; never use it for published numbers.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

CHECK_PROMPT, CHECK_WORD = "The capital of France is", " Paris"
TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "chat_template.jinja", "special_tokens_map.json")


def say(msg: str) -> None:
    print(f"[fp8 {time.strftime('%H:%M:%S')}] {msg}", flush=True)


def fp8_config(cpu_test: bool):
    from torchao.quantization import Float8DynamicActivationFloat8WeightConfig, PerRow
    from transformers import TorchAoConfig

    if cpu_test:  # torchao asserts SM >= 8.9 when it quantizes; the CPU check of the route skips that
        import torchao.quantization.quant_api as qa

        qa._check_hardware_support = lambda granularity: None
    return TorchAoConfig(Float8DynamicActivationFloat8WeightConfig(granularity=PerRow()))


def copy_tokenizer(src: Path, out: Path) -> None:
    for name in TOKENIZER_FILES:
        if (src / name).is_file():
            shutil.copyfile(src / name, out / name)


def greedy(model, tok, prompt: str = CHECK_PROMPT, n: int = 3) -> str:
    import torch

    ids = tok(prompt, return_tensors="pt").input_ids.to(model.device)
    with torch.no_grad():
        out = model.generate(ids, max_new_tokens=n, do_sample=False, pad_token_id=tok.eos_token_id)
    return tok.decode(out[0, ids.shape[1] :])


def quantize(src: Path, out: Path, device: str, cpu_test: bool, check: bool) -> None:
    """bf16 folder -> FP8 folder (quantized on `device` while loading, then saved pre-quantized)."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    if (out / "config.json").is_file():
        say(f"{out} exists: kept")
        return
    started = time.monotonic()
    model = AutoModelForCausalLM.from_pretrained(
        str(src), dtype=torch.bfloat16, device_map=device, quantization_config=fp8_config(cpu_test)
    )
    kinds: dict[str, int] = {}
    for _, mod in model.named_modules():
        if isinstance(mod, torch.nn.Linear):
            kinds[type(mod.weight).__name__] = kinds.get(type(mod.weight).__name__, 0) + 1
    say(f"quantized {src.name} on {device} in {time.monotonic() - started:.1f} s: linear weights {kinds}")
    if check:
        said = greedy(model, AutoTokenizer.from_pretrained(str(src)))
        mark = "ok" if said.startswith(CHECK_WORD) else "DIFFERS from the bf16 check word"
        say(f"fp8 in-process: {CHECK_PROMPT!r} -> {said!r} ({mark})")
    tmp = out.with_name(out.name + ".partial")
    shutil.rmtree(tmp, ignore_errors=True)
    model.save_pretrained(str(tmp))
    copy_tokenizer(src, tmp)
    tmp.rename(out)
    size = sum(f.stat().st_size for f in out.glob("*.safetensors"))
    say(f"wrote {out} ({size / 2**30:.2f} GiB) after {time.monotonic() - started:.1f} s")


def smollm2(a) -> None:
    bf16 = a.out / "bf16"
    if not (bf16 / "config.json").is_file():
        import importlib.util

        writer = importlib.util.find_spec("precmon.testbed.vllm_model_writer").origin  # run by path, as precmon does
        tmp = a.out / "writer"
        argv = [sys.executable, str(writer), "--out", str(tmp), "--gguf", str(a.gguf), "--variants", "bf16"]
        say(" ".join(argv))
        subprocess.run(argv, check=True)
        (tmp / "bf16").rename(bf16)
        shutil.rmtree(tmp)
    quantize(bf16, a.out / "fp8", a.device, a.cpu_test, check=True)


def synth8b(a) -> None:
    """The GGUF ladder's synthetic shape in HF format: same sizes, its own random values (seed 0)."""
    import torch
    from transformers import AutoModelForCausalLM, LlamaConfig

    from precmon.testbed.models import SHAPES

    bf16 = a.out / "bf16"
    if not (bf16 / "config.json").is_file():
        s = SHAPES[a.shape]
        cfg = LlamaConfig(
            vocab_size=s.n_vocab, hidden_size=s.n_embd, intermediate_size=s.n_ff, num_hidden_layers=s.n_layer,
            num_attention_heads=s.n_head, num_key_value_heads=s.n_head_kv, max_position_embeddings=s.n_ctx,
            rms_norm_eps=1e-5, bos_token_id=1, eos_token_id=2, tie_word_embeddings=False,
        )  # fmt: skip
        started = time.monotonic()
        torch.manual_seed(0)
        with torch.device(a.device):
            model = AutoModelForCausalLM.from_config(cfg, dtype=torch.bfloat16)
        model.to(a.device)  # a no-op when the device context already placed every parameter
        where = {str(p.device.type) for p in model.parameters()}
        if where != {torch.device(a.device).type}:
            raise SystemExit(f"the random model's parameters are on {where}, not {a.device}")
        n = sum(p.numel() for p in model.parameters())
        say(f"random {a.shape} Llama on {a.device}: {n / 1e9:.2f} B params in {time.monotonic() - started:.1f} s")
        tmp = bf16.with_name("bf16.partial")
        shutil.rmtree(tmp, ignore_errors=True)
        model.save_pretrained(str(tmp), max_shard_size="5GB")
        copy_tokenizer(a.tokenizer, tmp)
        tmp.rename(bf16)
        del model
        if a.device.startswith("cuda"):
            torch.cuda.empty_cache()
        say(f"wrote {bf16} after {time.monotonic() - started:.1f} s")
    quantize(bf16, a.out / "fp8", a.device, a.cpu_test, check=False)


def launcher() -> list[str]:
    """`transformers` next to this Python (the image's /opt/torch/.venv/bin/transformers), else -m."""
    script = Path(sys.executable).parent / "transformers"
    return [str(script)] if script.is_file() else [sys.executable, "-m", "transformers.cli.transformers"]


PLANS = {
    # The 8 B: speed, power, J/token. 128 decode tokens x 3 after 1 warm-up; `transformers serve` runs an
    # eager generate() per request (no batching), so no concurrency rows: simultaneous requests queue.
    "h200-8b": dict(
        output_tokens=128, decode_prompt_tokens=128, prefill_tokens=[512, 4096], ttft_tokens=4096,
        repeats=3, warmup=1, idle_s=3, timeout_s=180, cooldown_s=10, ready_timeout_s=420,
    ),
    # SmolLM2: answers and quality (n/a through this server: it ignores echo/logprobs); speed is a side note
    "h200-smol": dict(
        output_tokens=64, decode_prompt_tokens=128, prefill_tokens=[512], ttft_tokens=512,
        repeats=3, warmup=1, idle_s=3, timeout_s=120, cooldown_s=10, ready_timeout_s=300,
    ),
    # the CPU rehearsal: FP8 runs torch._scaled_mm's CPU fallback at well under 1 tok/s
    "cpu": dict(
        output_tokens=8, decode_prompt_tokens=16, prefill_tokens=[32], ttft_tokens=32,
        repeats=2, warmup=0, idle_s=1, timeout_s=400, cooldown_s=0, ready_timeout_s=300,
    ),
}  # fmt: skip


def toml_value(v) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return repr(v)
    if isinstance(v, list):
        return "[" + ", ".join(toml_value(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{ " + ", ".join(f"{k} = {toml_value(x)}" for k, x in v.items()) + " }"
    return json.dumps(str(v))  # a TOML basic string is a JSON string for these values


def sweep(a) -> None:
    """A sweep file whose variants precmon launches, measures and stops: bf16 first (the baseline)."""
    plan = dict(PLANS[a.profile or ("h200-8b" if a.name == "synth8b" else "h200-smol")])
    quality = a.name == "smollm2"  # recorded so the results say why it is n/a (no logprobs from the server)
    device = "cpu" if a.profile == "cpu" else "cuda"
    hub = Path(a.hub_cache).resolve()
    hub.mkdir(parents=True, exist_ok=True)  # GET /v1/models (precmon's health check) is a 500 without it
    env = {"HF_HUB_OFFLINE": "1", "HF_HUB_CACHE": str(hub), "HF_HUB_DISABLE_UPDATE_CHECK": "1"}
    if a.profile == "cpu":
        env["OMP_NUM_THREADS"] = "1"
    variants = []
    if a.llama_server and a.f16_gguf:  # the same shape's F16 GGUF on llama.cpp, for speed beside it
        llama = [a.llama_server, "-m", a.f16_gguf, "-ngl", "99", "-c", "8192"]
        variants.append(("F16 llama.cpp", "fp16", llama, "llamacpp"))
    for label, precision, folder in (("BF16", "bf16", "bf16"), ("FP8", "fp8", "fp8")):
        argv = [*launcher(), "serve", str((a.models / folder).resolve()), "--device", device, "--dtype", "auto"]
        variants.append((label, precision, argv, "openai"))
    lines = [f"# issue 40 run 3: {a.name} served by `transformers serve` (transformers 5.17), bf16 and torchao FP8"]
    lines += ["[defaults]", f"baseline = {toml_value(variants[0][0])}"]
    lines += [f"{k} = {toml_value(v)}" for k, v in plan.items()]
    lines += [f"quality = {toml_value(quality)}"] + (["quality_positions = 512"] if quality else [])
    for i, (label, precision, argv, server) in enumerate(variants):
        port = a.port + i
        argv = [*argv, "--host", "127.0.0.1", "--port", str(port)]
        lines += ["", "[[variant]]", f"label = {toml_value(label)}", f"precision = {toml_value(precision)}"]
        lines += [f"server = {toml_value(server)}", f"launch = {toml_value(argv)}", f'url = "http://127.0.0.1:{port}"']
        if server == "openai":
            lines.append(f"env = {toml_value(env)}")
    a.out.write_text("\n".join(lines) + "\n")
    say(f"wrote {a.out}")


def quality(a) -> None:
    """KL(bf16 || fp8) of the full next-token distribution at each of P positions of precmon's text,
    both models in this process on one device: the figure the server cannot give (no logprobs)."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from precmon.measure.quality.text import TEXT

    tok = AutoTokenizer.from_pretrained(str(a.bf16))
    ids = tok(TEXT, return_tensors="pt").input_ids[:, : a.positions + 1].to(a.device)
    logp = {}
    for name, folder in (("bf16", a.bf16), ("fp8", a.fp8)):
        model = AutoModelForCausalLM.from_pretrained(str(folder), device_map=a.device)
        with torch.no_grad():
            logp[name] = torch.log_softmax(model(ids).logits[0, :-1].float(), dim=-1)
        del model
    p, q = logp["bf16"], logp["fp8"]
    kl = (p.exp() * (p - q)).sum(-1)
    nxt = ids[0, 1:]
    own_p, own_q = p.gather(1, nxt[:, None])[:, 0], q.gather(1, nxt[:, None])[:, 0]
    d = own_p - own_q
    n = kl.numel()
    agree = (p.argmax(-1) == q.argmax(-1)).float()
    res = {
        "method": "in-process teacher forcing (transformers, full vocabulary), not through the server",
        "positions": n,
        "kld_mean": kl.mean().item(),
        "kld_mean_err95": 1.96 * kl.std().item() / math.sqrt(n),
        "kld_p99": kl.quantile(0.99).item(),
        "kld_max": kl.max().item(),
        "top1_agree": agree.mean().item(),
        "ppl_bf16": math.exp(-own_p.mean().item()),
        "ppl_fp8": math.exp(-own_q.mean().item()),
        "ppl_ratio": math.exp(d.mean().item()),
        "ppl_ratio_err95": math.exp(d.mean().item()) * 1.96 * d.std().item() / math.sqrt(n),
        "device": str(a.device),
        "torch": torch.__version__,
    }
    a.out.write_text(json.dumps(res, indent=2) + "\n")
    say(json.dumps(res))


def summary(a) -> None:
    """One line per variant of each results.json: what the claims table needs, and why a cell is n/a."""
    keys = ("decode_tok_s", "itl_ms_p50", "power_decode_w", "energy_decode_j_per_token", "memory_gb")
    lines = []
    for path in a.results:
        doc = json.loads(Path(path).read_text())
        lines.append(f"== {path}")
        for v in doc.get("variants", []):
            m = v.get("metrics") or {}
            got = ", ".join(f"{k}={m.get(k)}" for k in keys)
            lines.append(f"{v.get('label')} [{v.get('status')}] {got}")
            lines.append(f"  prefill_ms_per_token={m.get('prefill_ms_per_token')} ttft_s={m.get('ttft_s')}")
            q = v.get("quality") or {}
            lines.append(f"  quality: kld_mean={m.get('quality_kld_mean')} reason={q.get('reason')}")
            ans = v.get("answer") or {}
            lines.append(f"  answer: {ans.get('text') or ans.get('error')!r}")
            lines += [f"  warning: {w}" for w in v.get("warnings") or []]
            lines += [f"  error: {e}" for e in v.get("errors") or []]
    text = "\n".join(lines) + "\n"
    if a.out:
        Path(a.out).write_text(text)
    print(text, end="")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    for name in ("smollm2", "synth8b", "quantize"):
        p = sub.add_parser(name)
        p.add_argument("--device", default="cuda")
        p.add_argument("--cpu-test", action="store_true")
        if name == "quantize":
            p.add_argument("--src", type=Path, required=True)
        p.add_argument("--out", type=Path, required=True)
    sub.choices["smollm2"].add_argument("--gguf", type=Path, required=True)
    # llama.cpp's 32 k SPM test vocabulary as precmon's test-bed writer turns it into a tokenizer
    # (vllm_model_writer.write_tokenizer); made beforehand: building its merges takes minutes
    sub.choices["synth8b"].add_argument("--tokenizer", type=Path, required=True)
    sub.choices["synth8b"].add_argument("--shape", default="8b")
    p = sub.add_parser("sweep")
    p.add_argument("--name", choices=("smollm2", "synth8b"), required=True)
    p.add_argument("--models", type=Path, required=True)
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--profile", choices=tuple(PLANS), help="default: h200-8b or h200-smol by --name")
    p.add_argument("--port", type=int, default=8401)
    p.add_argument("--hub-cache", default=os.environ.get("HF_HUB_CACHE", "/tmp/fp8-hf-hub"))
    p.add_argument("--llama-server", help="optional: a llama.cpp F16 variant first (with --f16-gguf)")
    p.add_argument("--f16-gguf")
    p = sub.add_parser("quality")
    p.add_argument("--bf16", type=Path, required=True)
    p.add_argument("--fp8", type=Path, required=True)
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--positions", type=int, default=512)
    p.add_argument("--device", default="cuda")
    p = sub.add_parser("summary")
    p.add_argument("results", nargs="+")
    p.add_argument("--out")
    a = ap.parse_args()
    if a.cmd == "quantize":
        quantize(a.src, a.out, a.device, a.cpu_test, check=False)
    else:
        {"smollm2": smollm2, "synth8b": synth8b, "sweep": sweep, "quality": quality, "summary": summary}[a.cmd](a)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
