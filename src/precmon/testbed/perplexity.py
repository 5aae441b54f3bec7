"""`llama-perplexity --kl-divergence`: the truth check for precmon's quality figures.

llama.cpp's own tool computes KL divergence over the whole vocabulary from the GGUF files,
offline; precmon's comes through the server from the top-K (docs/design.md §4 "Quality").
Running both on the same text and models says what the top-K approximation costs.

The tool is one of the test bed's build targets (testbed/llama_build.py `TOOLS`); a build made
before it was is completed here (`cmake --build … --target llama-perplexity`, under the build's
lock), not rebuilt from scratch.

`truth_text` is the evaluation text of the truth checks: not precmon's built-in one (whose
figures a change to the scoring could have been tuned on), but text every Python carries.
"""

from __future__ import annotations

import re
import subprocess
from dataclasses import dataclass
from pathlib import Path
from pydoc_data.topics import topics

from precmon.testbed.cachefs import cache_lock
from precmon.testbed.llama_build import BuildError, LlamaBuild

TOOL = "llama-perplexity"
#: The truth checks' text: sections of Python's own language reference (pydoc's topics), prose
#: with code, about 4,000 tokens of SmolLM2's vocabulary (8 windows of 512).
TRUTH_TOPICS = ("execmodel", "import")


def truth_text() -> str:
    """The truth checks' evaluation text (the topics of TRUTH_TOPICS, one after the other)."""
    return "\n".join(topics[t] for t in TRUTH_TOPICS)


def build_perplexity(build: LlamaBuild, jobs: int = 2, timeout_s: float = 1800.0) -> Path:
    """The `llama-perplexity` binary of `build`, compiled into its build folder when absent."""
    binary = build.tool(TOOL)
    if binary.exists():
        return binary
    with cache_lock(build.root.with_name(f".{build.root.name}.lock")):
        if not binary.exists():
            proc = subprocess.run(
                ["cmake", "--build", str(build.root / "build"), "-j", str(jobs), "--target", TOOL],
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                timeout=timeout_s,
            )
            if proc.returncode != 0 or not binary.exists():
                tail = proc.stdout.decode(errors="replace")[-2000:]
                raise BuildError(f"compile {TOOL} failed (exit {proc.returncode}):\n{tail}")
    return binary


@dataclass(frozen=True)
class KldStats:
    """What `llama-perplexity --kl-divergence` prints, as numbers (nats; fractions, not %); the
    figures an older build does not print are None."""

    kld_mean: float
    kld_p99: float
    same_top: float
    positions: int
    kld_err95: float | None = None  # 1.96 × the standard error it prints after "±"
    kld_max: float | None = None
    ppl_ratio: float | None = None
    rms_dp: float | None = None


_MEAN = re.compile(r"^Mean\s+KLD:\s+([-\d.eE+]+)", re.M)
_P99 = re.compile(r"^99\.0%\s+KLD:\s+([-\d.eE+]+)", re.M)
_TOP = re.compile(r"^Same top p:\s+([-\d.eE+]+)", re.M)
_CHUNKS = re.compile(r"computing over (\d+) chunks, n_ctx=(\d+)")
_OPTIONAL = {
    "kld_err95": (re.compile(r"^Mean\s+KLD:\s+[-\d.eE+]+\s+±\s+([-\d.eE+]+)", re.M), 1.96),
    "kld_max": (re.compile(r"^Maximum KLD:\s+([-\d.eE+]+)", re.M), 1.0),
    "ppl_ratio": (re.compile(r"^Mean PPL\(Q\)/PPL\(base\)\s+:\s+([-\d.eE+]+)", re.M), 1.0),
    "rms_dp": (re.compile(r"^RMS Δp\s+:\s+([-\d.eE+]+)", re.M), 0.01),
}


def parse_kld_output(text: str) -> KldStats:
    """The statistics block of `llama-perplexity --kl-divergence` (BuildError when absent)."""
    found = [r.search(text) for r in (_MEAN, _P99, _TOP, _CHUNKS)]
    if not all(found):
        raise BuildError(f"{TOOL}: no KL statistics in its output:\n{text[-2000:]}")
    mean, p99, top, chunks = (m for m in found if m is not None)
    n_chunk, n_ctx = int(chunks.group(1)), int(chunks.group(2))
    optional = {}
    for name, (pattern, scale) in _OPTIONAL.items():
        m = pattern.search(text)
        optional[name] = float(m.group(1)) * scale if m else None
    return KldStats(
        kld_mean=float(mean.group(1)),
        kld_p99=float(p99.group(1)),
        same_top=float(top.group(1)) / 100.0,
        positions=n_chunk * (n_ctx - 1 - n_ctx // 2),
        **optional,
    )


def kl_divergence(
    binary: Path,
    base_model: Path,
    model: Path,
    text_file: Path,
    base_logits: Path,
    ctx_tokens: int = 512,
    chunks: int | None = None,
) -> KldStats:
    """KL(base ‖ model) over the whole vocabulary, on the second half of each `ctx_tokens` chunk of
    the text (llama-perplexity's protocol; the first `chunks` only, where given). The base's logits
    are saved to `base_logits` once (for the same `chunks`)."""
    common = ["-f", str(text_file), "-c", str(ctx_tokens), "-b", str(ctx_tokens), "-t", "2"]
    if chunks is not None:
        common += ["--chunks", str(chunks)]
    if not base_logits.exists():
        _run([str(binary), "-m", str(base_model), *common, "--kl-divergence-base", str(base_logits)])
    out = _run([str(binary), "-m", str(model), *common, "--kl-divergence-base", str(base_logits), "--kl-divergence"])
    return parse_kld_output(out)


def _run(argv: list[str]) -> str:
    proc = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=900)
    text = proc.stdout.decode(errors="replace")
    if proc.returncode != 0:
        raise BuildError(f"{TOOL} failed (exit {proc.returncode}):\n{text[-2000:]}")
    return text
