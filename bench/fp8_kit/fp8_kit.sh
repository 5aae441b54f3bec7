#!/usr/bin/env bash
# FP8 on a Hopper or Blackwell GPU: SmolLM2-135M-Instruct and the synthetic 8 B Llama, each in bf16 and in
# torchao FP8 (per-row W8A8 on torch._scaled_mm), served by `transformers serve` and swept by precmon.
#
# Run from the repository root (the device tool's working tree), after the device call carried `.dev/fp8`:
#   bash .dev/fp8/scripts/fp8_kit.sh                 # all: install preflight models quality sweep-8b sweep-smol summary
#   bash .dev/fp8/scripts/fp8_kit.sh install preflight   # any subset, in this order
# Inputs found on the machine (earlier runs of the same session), or named by environment:
#   SMOLLM2_GGUF   the sha256-checked Q4_1 release (default: searched in the precmon caches and /tmp/g)
#   LLAMA_SERVER, F16_GGUF   the CUDA llama-server and the 8 B F16 GGUF of gpu_proof.py (searched under
#                  /tmp/g); when both exist the 8 B sweep starts with "F16 llama.cpp". FP8_WITH_LLAMA=0: leave it out
#   FP8_WORK (default /tmp/fp8), FP8_SITE (default /tmp/site), PYTHON (default python3)
#   FP8_CPU_TEST=1   the rehearsal on a machine without an FP8 GPU: CPU, torchao's hardware assertion skipped,
#                  the tiny shape for "8 B", the cpu plan. Never for published numbers.
# Results: $FP8_WORK/out/ (sweep folders, quality-direct.json, summary.txt, logs); with $OUT set (the
# device tool) also $OUT/fp8-run3.tar.gz and $OUT/fp8-summary.txt.
set -uo pipefail

KIT=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(pwd)
W=${FP8_WORK:-/tmp/fp8}
SITE=${FP8_SITE:-/tmp/site}
PY=${PYTHON:-python3}
RES=$W/out
MODELS=$W/models
TOOL=$KIT/fp8_models.py
mkdir -p "$RES" "$MODELS"
if [ "${FP8_CPU_TEST:-0}" = 1 ]; then
    DEV=(--device cpu --cpu-test) SHAPE=(--shape tiny) PROFILE=(--profile cpu) QDEV=(--device cpu --positions 64)
    export OMP_NUM_THREADS=${OMP_NUM_THREADS:-1}
else
    DEV=() SHAPE=() PROFILE=() QDEV=()
fi

export PYTHONPATH=$SITE:$ROOT/src${PYTHONPATH:+:$PYTHONPATH}
export PYTHONUNBUFFERED=1 TOKENIZERS_PARALLELISM=false
# offline: no hub lookups, no PyPI version check at CLI start, and a hub cache folder that exists
# (GET /v1/models scans it and answers 500 CacheNotFound without it; precmon lists models there)
export HF_HUB_OFFLINE=1 HF_HUB_DISABLE_UPDATE_CHECK=1 HF_HUB_CACHE=$W/hf-hub
mkdir -p "$HF_HUB_CACHE"

t0=$(date +%s)
say() { echo "[fp8_kit +$(($(date +%s) - t0))s] $*"; }
die() { say "STOP: $*"; exit 3; }

step_install() {
    # the serving stack transformers 5.17 needs (fastapi, uvicorn, pydantic, openai and their needs) and torchao
    $PY -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target "$SITE" "$KIT"/whl/*.whl ||
        die "pip install of $KIT/whl failed"
    say "installed $(ls "$KIT"/whl/*.whl | wc -l) wheels into $SITE"
}

step_preflight() {
    FP8_CPU_TEST=${FP8_CPU_TEST:-0} $PY - <<'EOF' || die "preflight failed"
import importlib.metadata as md, os, torch
from transformers.utils.import_utils import is_serve_available
names = ("torch", "transformers", "torchao", "fastapi", "uvicorn", "pydantic", "openai", "starlette", "anyio", "gguf", "accelerate")
print("versions:", {n: md.version(n) for n in names})
assert is_serve_available(), "transformers says the serving packages are missing"
import torchao  # noqa: F401  (its .so files may warn; the per-row path needs none of them)
if os.environ["FP8_CPU_TEST"] == "1":
    raise SystemExit(0)
assert torch.cuda.is_available(), "no CUDA device"
cc = torch.cuda.get_device_capability()
print("gpu:", torch.cuda.get_device_name(), cc, "cuda", torch.version.cuda)
assert cc >= (8, 9), f"FP8 _scaled_mm needs SM 8.9+, this is {cc}"
a = torch.randn(64, 128, device="cuda").to(torch.float8_e4m3fn)
b = torch.randn(256, 128, device="cuda").to(torch.float8_e4m3fn).t()
sa, sb = torch.ones(64, 1, device="cuda"), torch.ones(1, 256, device="cuda")
print("rowwise _scaled_mm:", tuple(torch._scaled_mm(a, b, scale_a=sa, scale_b=sb, out_dtype=torch.bfloat16).shape))
EOF
    local free_gb
    free_gb=$(df -BG --output=avail "$W" | tail -1 | tr -dc 0-9)
    say "free disk under $W: ${free_gb} GiB (the 8 B needs ~23: bf16 13.5 GiB + fp8 7.3 GiB)"
    if [ "$free_gb" -lt 24 ] && [ ! -f "$MODELS/synth8b/fp8/config.json" ] && [ "${FP8_CPU_TEST:-0}" != 1 ]; then
        du -sh /tmp/* 2>/dev/null | sort -h | tail -8
        die "less than 24 GiB free: remove the 8 B quantized GGUFs of run 2 (keep 8b-F16.gguf) and run again"
    fi
}

find_release() {
    local c
    for c in "${SMOLLM2_GGUF:-}" "${PRECMON_CACHE:-/nonexistent}/models/smollm2-release/smollm2-Q4_1.gguf" \
        /tmp/g/cache/models/smollm2-release/smollm2-Q4_1.gguf "$HOME/.cache/precmon/models/smollm2-release/smollm2-Q4_1.gguf"; do
        [ -n "$c" ] && [ -f "$c" ] && { echo "$c"; return 0; }
    done
    find /tmp /root -name 'smollm2-Q4_1.gguf' -size +90M 2>/dev/null | head -1
}

step_models() {
    local rel want
    rel=$(find_release)
    [ -n "$rel" ] || die "no smollm2-Q4_1.gguf (set SMOLLM2_GGUF)"
    want=$($PY -c 'from precmon.testbed.real_model import SHA256; print(SHA256)')
    [ "$(sha256sum "$rel" | cut -d' ' -f1)" = "$want" ] || die "$rel: sha256 is not the release's"
    say "SmolLM2 release $rel (sha256 ok)"
    # SmolLM2 (CPU-bound GGUF read, then a small GPU quantize) beside the 8 B (GPU and disk)
    $PY "$TOOL" smollm2 --gguf "$rel" --out "$MODELS/smollm2" "${DEV[@]}" >"$RES/models-smollm2.log" 2>&1 &
    local smol=$!
    $PY "$TOOL" synth8b --tokenizer "$KIT/tok-spm32k" --out "$MODELS/synth8b" "${DEV[@]}" "${SHAPE[@]}" 2>&1 | tee "$RES/models-synth8b.log" |
        grep -E '^\[fp8|Error|error' || true
    wait $smol || { tail -20 "$RES/models-smollm2.log"; die "SmolLM2 models failed"; }
    grep -E '^\[fp8|^\[precmon' "$RES/models-smollm2.log"
    [ -f "$MODELS/synth8b/fp8/config.json" ] || die "8 B models failed: see $RES/models-synth8b.log"
    du -sh "$MODELS"/*/*
}

step_quality() {
    # not through the server (it returns no log-probabilities): both SmolLM2 folders in one process
    $PY "$TOOL" quality --bf16 "$MODELS/smollm2/bf16" --fp8 "$MODELS/smollm2/fp8" --out "$RES/quality-direct.json" \
        "${QDEV[@]}" 2>&1 | grep -E '^\[fp8|Error' || say "direct quality failed (the sweeps do not need it)"
}

run_sweep() { # name: smollm2 | synth8b
    local name=$1 extra=()
    if [ "$name" = synth8b ] && [ "${FP8_WITH_LLAMA:-1}" = 1 ]; then
        local ls=${LLAMA_SERVER:-$(ls /tmp/g/cache/llama.cpp-*-cuda-*/build/bin/llama-server 2>/dev/null | head -1)}
        local f16=${F16_GGUF:-/tmp/g/models/8b-F16.gguf}
        if [ -x "$ls" ] && [ -f "$f16" ]; then extra=(--llama-server "$ls" --f16-gguf "$f16"); fi
    fi
    $PY "$TOOL" sweep --name "$name" --models "$MODELS/$name" --out "$RES/$name.toml" --hub-cache "$HF_HUB_CACHE" \
        "${PROFILE[@]}" "${extra[@]}" || die "sweep file for $name"
    $PY -m precmon.cli sweep "$RES/$name.toml" --check || die "precmon refused $RES/$name.toml"
    say "sweep $name: $(grep -c '^\[\[variant' "$RES/$name.toml") variants"
    $PY -m precmon.cli sweep "$RES/$name.toml" --headless --out "$RES/sweep-$name" >"$RES/sweep-$name.log" 2>&1
    say "sweep $name exit $?"
    grep -E '^(BF16|FP8|F16 llama.cpp):' "$RES/sweep-$name.log" || tail -5 "$RES/sweep-$name.log"
}

step_sweep_8b() { run_sweep synth8b; }
step_sweep_smol() { run_sweep smollm2; }

step_summary() {
    local r=() f
    for f in "$RES"/sweep-*/results.json; do [ -f "$f" ] && r+=("$f"); done
    [ ${#r[@]} -gt 0 ] && $PY "$TOOL" summary "${r[@]}" --out "$RES/summary.txt"
    [ -f "$RES/quality-direct.json" ] && cat "$RES/quality-direct.json" | tee -a "$RES/summary.txt"
    echo "device time of this script: $(($(date +%s) - t0)) s" | tee -a "$RES/summary.txt"
    if [ -n "${OUT:-}" ] && [ -d "${OUT:-}" ]; then
        tar czf "$OUT/fp8-run3.tar.gz" -C "$W" out && cp "$RES/summary.txt" "$OUT/fp8-summary.txt"
        say "results packed into $OUT/fp8-run3.tar.gz ($(du -h "$OUT/fp8-run3.tar.gz" | cut -f1))"
    fi
}

steps=("$@")
[ ${#steps[@]} -eq 0 ] || [ "${steps[0]}" = all ] &&
    steps=(install preflight models quality sweep-8b sweep-smol summary)
for s in "${steps[@]}"; do
    say "step $s"
    "step_${s//-/_}"
done
say "done: ${steps[*]}"
