"""How far precmon's KL from top-K lists is from the full-vocabulary KL, offline (issue 37).

A server lists only the most probable tokens; precmon's KL is taken over the baseline's listed
tokens plus one bucket for the rest, plus an estimate of what the bucket hides
(measure/quality/score.py `kl_parts`). Here both sides come from full distributions:
`llama-perplexity --kl-divergence-base` writes a model's log-probabilities over the whole
vocabulary at every scored position (measure/quality/llama_base.py reads them), for the baseline
and for each variant on the same text and windows. Per position the exact KL over the vocabulary
(llama-perplexity's own sum: base tokens above e^-16) is set against what precmon computes from
the top-K lists a server would give: the baseline's fewest tokens holding 0.95 of its probability
(at least 20, at most K_MAX), the variant's as many of its own, with and without the tail estimate,
at K_MAX = 1,000 (llama.cpp) and 50 (vLLM: collect.PROMPT_LOGPROBS_MAX), and fixed top-20.
Prints a Markdown table (`--out FILE` writes it too). Not a test: the base files take a minute a
variant on two shared cores.

    PYTHONPATH=src python bench/bench_quality_tail.py [--chunks N] [--out FILE]
"""

from __future__ import annotations

import argparse
import subprocess
import tempfile
from pathlib import Path

import numpy as np

from precmon.measure.quality.collect import PROMPT_LOGPROBS_MAX
from precmon.measure.quality.llama_base import BaseFile, read_base_file
from precmon.measure.quality.score import Position, kl_parts
from precmon.testbed.llama_build import build_llama
from precmon.testbed.perplexity import TRUTH_TOPICS, build_perplexity, truth_text
from precmon.testbed.real_model import make_extra, make_ladder

#: (name, target mass, fewest, most): what a server would be asked for.
POLICIES = (
    ("adaptive ≤ 1000", 0.95, 20, 1000),
    (f"adaptive ≤ {PROMPT_LOGPROBS_MAX}", 0.95, 20, PROMPT_LOGPROBS_MAX),
    ("top-20", 0, 20, 20),
)


def base_file(binary: Path, model: Path, text: Path, out: Path, chunks: int) -> BaseFile:
    argv = [str(binary), "-m", str(model), "-f", str(text), "-c", "512", "-b", "512", "-t", "2"]
    argv += ["--chunks", str(chunks), "--kl-divergence-base", str(out)]
    subprocess.run(argv, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=1800)
    return read_base_file(out)


def _listed(logp: np.ndarray, k: int) -> Position:
    ids = np.argpartition(-logp, k - 1)[:k]
    ids = ids[np.lexsort((ids, -logp[ids]))]
    return Position(tuple((int(t), float(logp[t])) for t in ids))


def compare(base: BaseFile, var: BaseFile) -> dict[str, tuple[float, float, float]]:
    """{policy: (mean listed KL, mean listed + tail, mean full KL)} over every position."""
    sums = {name: [0.0, 0.0] for name, *_ in POLICIES}
    full, n = 0.0, 0
    for c in range(base.chunks):
        p_all, q_all = base.chunk_logprobs(c).astype(np.float64), var.chunk_logprobs(c).astype(np.float64)
        for p, q in zip(p_all, q_all, strict=True):
            keep = p > -16.0
            full += float(np.sum(np.exp(p[keep]) * (p[keep] - q[keep])))
            n += 1
            order = np.sort(p)[::-1][:1000]
            mass = np.cumsum(np.exp(order))
            for name, target, fewest, most in POLICIES:
                k = max(fewest, min(int(np.searchsorted(mass, target)) + 1, most)) if target else most
                listed, tail = kl_parts(_listed(p, k), _listed(q, k))
                sums[name][0] += listed
                sums[name][1] += listed + tail
    return {name: (s[0] / n, s[1] / n, full / n) for name, s in sums.items()}


def main() -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--chunks", type=int, default=2, help="512-token windows (2: precmon's default positions)")
    ap.add_argument("--out", type=Path, default=None)
    a = ap.parse_args()
    build = build_llama("cpu")
    models = make_ladder(build) | make_extra(build)
    binary = build_perplexity(build)
    work = Path(tempfile.mkdtemp(prefix="precmon-quality-tail-"))
    text = work / "text.txt"
    text.write_text(truth_text(), encoding="utf-8")
    base = base_file(binary, models["F16"], text, work / "F16.kld", a.chunks)
    heads = " | ".join(f"{name}: listed / with tail" for name, *_ in POLICIES)
    lines = [
        f"Text: Python's language reference ({', '.join(TRUTH_TOPICS)}), {a.chunks} windows of 512, "
        f"{a.chunks * base.rows_per_chunk} positions; each figure ÷ the full-vocabulary KL.",
        "",
        f"| variant | full KL (nats) | {heads} |",
        "| --- | ---: |" + " ---: |" * len(POLICIES),
    ]
    for label in (x for x in models if x != "F16"):
        got = compare(base, base_file(binary, models[label], text, work / f"{label}.kld", a.chunks))
        full = next(iter(got.values()))[2]
        cells = " | ".join(f"{listed / full:.3f}× / {tailed / full:.3f}×" for listed, tailed, _ in got.values())
        lines.append(f"| {label} | {full:.4f} | {cells} |")
        print(lines[-1], flush=True)
    out = "\n".join(lines) + "\n"
    print(out)
    if a.out:
        a.out.write_text(out, encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
