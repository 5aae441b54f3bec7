"""llama-perplexity's `--kl-divergence` statistics, parsed (precmon.testbed.perplexity), from a real
run: the test bed's SmolLM2 Q4_0 against its F16 on precmon's built-in text, `-c 512 --chunks 1`
(tests/fakes/shapes/llama_perplexity_kld_q4_0.txt)."""

from __future__ import annotations

from pathlib import Path

import pytest

from precmon.testbed.llama_build import BuildError
from precmon.testbed.perplexity import parse_kld_output

REAL = (Path(__file__).parents[1] / "fakes" / "shapes" / "llama_perplexity_kld_q4_0.txt").read_text()


def test_every_figure_it_prints_is_read_in_precmons_units():
    s = parse_kld_output(REAL)
    assert s.positions == 255  # the second half of one 512-token chunk
    assert s.kld_mean == pytest.approx(0.252393) and s.kld_p99 == pytest.approx(0.881776)
    assert s.kld_err95 == pytest.approx(1.96 * 0.011743)  # it prints one standard error
    assert s.kld_max == pytest.approx(1.414868)
    assert s.same_top == pytest.approx(0.72941) and s.rms_dp == pytest.approx(0.11245)  # fractions, not %
    assert s.ppl_ratio == pytest.approx(1.215437)


def test_an_older_output_without_the_newer_lines_still_parses():
    old = "\n".join(line for line in REAL.splitlines() if not line.startswith(("Maximum", "RMS", "Mean PPL(Q)/")))
    s = parse_kld_output(old)
    assert s.kld_max is None and s.rms_dp is None and s.ppl_ratio is None and s.kld_mean == pytest.approx(0.252393)


def test_output_without_statistics_is_a_build_error():
    with pytest.raises(BuildError, match="no KL statistics"):
        parse_kld_output("main: error: failed to load model")
