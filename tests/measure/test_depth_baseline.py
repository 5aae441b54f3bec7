"""The depth step's d0 decode against the plain decode (`depth-baseline-mismatch:`), hand-made runs."""

from __future__ import annotations

from precmon.core.schema import Run, VariantResult
from precmon.measure.depth.run import baseline_check, summarize
from precmon.measure.depth.steps import BASELINE, DepthPlan


def decode(phase: str, tok_s: float, depth: int | None = None, ok: bool = True) -> Run:
    return Run(phase=phase, prompt_tokens=32, output_tokens=64, decode_tok_s=tok_s, ok=ok, depth_tokens=depth)


def variant(plain: list[float], d0: list[float]) -> VariantResult:
    res = VariantResult(label="x", precision=None, model=None)
    res.runs = [decode("decode", x) for x in plain] + [decode("depth_decode", x, 0) for x in d0]
    return res


def test_fires_when_d0_reads_31_percent_below_the_plain_decode():
    res = variant([204.1, 203.0, 205.5], [141.3, 140.0, 142.0])
    res.warnings = ["depth-baseline-mismatch: an old line", "noisy: kept"]
    summarize(res, DepthPlan([0], {0: []}))
    assert res.warnings == [
        "noisy: kept",
        "depth-baseline-mismatch: decode at d0 in the depth step 141.3 tok/s is 31% below the plain decode "
        "204.1 tok/s: the server's KV cache held other data during the depth runs (llama.cpp with a unified "
        "KV cache, -kvu, attends over every slot's cached cells); the depth curve is not comparable with "
        "llama-bench -d. Run depth with -np 1 or --no-kv-unified.",
    ]
    fig = res.validity["depth_baseline"]
    assert fig == {"decode_tok_s": 204.1, "d0_decode_tok_s": 141.3, "gap": -0.3077, "gap_max": 0.15}
    summarize(res, DepthPlan([0], {0: []}))
    assert len([w for w in res.warnings if w.startswith(BASELINE)]) == 1  # replaced, not added


def test_silent_at_5_percent_below_and_when_d0_is_faster():
    assert baseline_check(variant([200.0], [190.0]).runs)[1] == []
    assert baseline_check(variant([200.0], [230.0]).runs)[1] == []
    assert baseline_check(variant([200.0], [169.0]).runs)[1] != []  # just past 15%


def test_silent_when_either_side_is_missing():
    for res in (variant([], [141.0]), variant([204.0], []), variant([204.0], [])):
        fig, warnings = baseline_check(res.runs)
        assert warnings == [] and fig["reason"].startswith("n/a")
    only_deep = variant([204.0], [])
    only_deep.runs.append(decode("depth_decode", 100.0, 2048))  # depth > 0 is not the baseline
    assert baseline_check(only_deep.runs)[1] == []


def test_excluded_runs_do_not_count():
    res = variant([204.0], [])
    res.runs += [decode("depth_decode", 100.0, 0, ok=False), decode("depth_decode", 200.0, 0)]
    assert baseline_check(res.runs)[1] == []


def test_judged_on_the_recorded_gap():
    """CI once read a warning beside a recorded gap of -0.15 (the limit): the raw gap was a hair
    past it. The gap is judged as it is recorded, so the file never contradicts itself."""
    fig, warnings = baseline_check(variant([100.0], [84.996]).runs)  # raw -0.15004
    assert fig["gap"] == -0.15 and warnings == []
    fig, warnings = baseline_check(variant([100.0], [84.99]).runs)  # raw -0.1501
    assert fig["gap"] == -0.1501 and warnings != []
