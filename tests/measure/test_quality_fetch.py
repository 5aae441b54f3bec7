"""Teacher-forced positions from llama-server's answers, the reference file, and the n/a paths,
against a stub server (no HTTP; the real llama-server is tests/integration/test_quality_llamacpp.py)."""

from __future__ import annotations

import json
import math
import re
import threading
from typing import Any

import pytest

from precmon.measure.quality.fetch import MIN_LOGPROB, llamacpp_positions, parse_llamacpp
from precmon.measure.quality.reference import QualityRefError, Reference, load_reference, save_reference
from precmon.measure.quality.run import measure_quality
from precmon.measure.quality.settings import QualitySettings
from precmon.measure.quality.windows import FROM_START
from precmon.servers.base import ServerError
from tests.fakes.quality_stub import StubLlama, answer


def FromStart(*args, **kwargs):  # noqa: N802 - a QualitySettings scoring from the text's start
    """The tests' short texts are scored from their start (the option for texts shorter than a window)."""
    return QualitySettings(*args, convention=FROM_START, **kwargs)


def test_parse_sorts_cuts_to_k_and_reads_the_forced_tokens_own_logprob():
    body = answer([(5, -2.0), (3, -0.5), (7, -1.0)], own_id=42, own_lp=-7.25)
    p = parse_llamacpp(body, forced=42, top_k=2)
    assert p.top == ((3, -0.5), (7, -1.0))
    assert p.own_logprob == -7.25


def test_parse_gives_no_own_logprob_when_the_sampler_did_not_take_the_forced_token():
    assert parse_llamacpp(answer([(3, -0.5)], own_id=3, own_lp=-0.5), forced=42, top_k=5).own_logprob is None


def test_parse_skips_hostile_entries_and_floors_a_zero_probability():
    body = answer(
        [(True, -0.1), ("x", -0.2), (4, "nan"), (5, 3.0), (6, None), (8, -0.7), (9, -3.4e38)], own_id=8, own_lp=-3.4e38
    )
    p = parse_llamacpp(body, forced=8, top_k=20)
    assert p.top == ((8, -0.7), (9, MIN_LOGPROB))  # the bool id, the string id, NaN, +3 and null are dropped
    assert p.own_logprob == MIN_LOGPROB


@pytest.mark.parametrize("body", [{}, {"completion_probabilities": []}, answer([("a", "b")]), [1, 2], "text"])
def test_parse_refuses_an_answer_without_a_usable_top_list(body):
    with pytest.raises(ServerError, match="quality: /completion"):
        parse_llamacpp(body, forced=1, top_k=5)


def test_one_request_per_position_with_the_prefix_cache_on_and_the_next_token_forced():
    stub = StubLlama([1, 10, 11, 12], router=True)
    seen: list[tuple[int, int]] = []
    positions = llamacpp_positions(
        stub, stub.tokens, 2, model="m", router=True, progress=lambda d, t: seen.append((d, t))
    )
    assert len(positions) == 3 and seen == [(1, 3), (2, 3), (3, 3)]
    assert [b["prompt"] for b in stub.bodies] == [[1], [1, 10], [1, 10, 11]]
    assert [b["logit_bias"][0][0] for b in stub.bodies] == [10, 11, 12]
    first = stub.bodies[0]
    assert first["cache_prompt"] is True and first["post_sampling_probs"] is False
    assert first["n_probs"] == 2 and first["n_predict"] == 1 and first["model"] == "m"
    assert positions[0].own_logprob == -1.5


def test_baseline_then_variant_scores_and_the_reference_round_trips(tmp_path):
    qs = FromStart(positions=3, top_k=2, text="some text", text_name="t.txt")
    base = measure_quality(StubLlama([1, 10, 11, 12, 13]), qs, label="F16", model=None, reference=None)
    assert base.metrics == {
        "quality_kld_mean": 0.0,
        "quality_kld_p99": 0.0,
        "quality_top1_agree": 1.0,
        "quality_ppl": pytest.approx(math.exp(1.5), abs=1e-3),
        # the trusted format: the baseline against itself
        "quality_kld_mean_err95": 0.0,
        "quality_kld_max": 0.0,
        "quality_top1_agree_err95": 0.0,
        "quality_ppl_ratio": 1.0,
        "quality_ppl_ratio_err95": 0.0,
        "quality_rms_dp": 0.0,
        "quality_rms_dp_err95": 0.0,
    }
    assert base.reference is not None and base.reference.tokens == (1, 10, 11, 12)  # P + 1 ids
    save_reference(tmp_path / "quality-ref.json", base.reference)
    ref = load_reference(tmp_path / "quality-ref.json")
    assert ref == base.reference
    var = measure_quality(StubLlama([1, 10, 11, 12, 13], shift=0.1), qs, label="Q4", model=None, reference=ref)
    # each position: 0.5 ln(0.5/0.5) + 0.3 ln(0.3/0.2) + 0.2 ln(0.2/0.3) = 0.121640 − 0.081093
    assert var.metrics["quality_kld_mean"] == pytest.approx(0.040547, abs=1e-6)
    assert var.metrics["quality_top1_agree"] == 1.0
    assert var.metrics["quality_kld_max"] == pytest.approx(0.040547, abs=1e-6)  # the same at every position
    assert var.metrics["quality_kld_mean_err95"] == pytest.approx(0.0, abs=1e-9)
    assert var.info.baseline == "F16" and var.info.positions == 3 and var.reference is None


def test_a_variant_with_another_tokenizer_or_text_is_na_with_the_reason():
    qs = FromStart(positions=3, top_k=2, text="some text")
    ref = measure_quality(StubLlama([1, 10, 11, 12]), qs, label="F16", model=None, reference=None).reference
    other = measure_quality(StubLlama([1, 10, 99, 12]), qs, label="X", model=None, reference=ref)
    assert other.metrics["quality_kld_mean"] is None
    assert other.info.reason == "the tokenizer differs from the baseline's at token 2"
    text = measure_quality(StubLlama([1, 10, 11, 12]), FromStart(3, 2, "other"), label="X", model=None, reference=ref)
    assert "another text" in text.info.reason


def test_servers_without_log_probs_and_a_stop_are_na_not_errors():
    class Ollama:
        kind, url = "ollama", "http://o"

    out = measure_quality(Ollama(), FromStart(), label="q", model=None, reference=None)
    assert out.metrics["quality_kld_mean"] is None and out.info.reason.startswith("not available on ollama servers")
    stop = threading.Event()
    stop.set()
    stopped = measure_quality(
        StubLlama([1, 2, 3]), FromStart(2, 2, "x"), label="a", model=None, reference=None, stop=stop
    )
    assert stopped.info.reason == "stopped by user before quality scoring finished"


def test_a_flat_baseline_distribution_notes_that_the_kl_is_a_lower_bound():
    class Flat(StubLlama):
        def post_json(self, path: str, payload: dict[str, Any], timeout_s: float = 30.0) -> object:
            return answer([(5, math.log(0.01)), (6, math.log(0.01))], payload["logit_bias"][0][0], -4.6)

    out = measure_quality(Flat([1, 2, 3]), FromStart(2, 2, "x"), label="a", model=None, reference=None)
    assert out.info.baseline_topk_mass == pytest.approx(0.02)
    assert out.info.notes == [
        "the baseline's top-2 holds 2.00% of the probability on average: the KL is a lower bound here "
        "(raise quality_top_k, or see docs/design.md §4 Quality)"
    ]


def test_a_short_text_cuts_the_positions_with_a_note():
    out = measure_quality(StubLlama([1, 2, 3]), FromStart(512, 2, "x"), label="a", model=None, reference=None)
    assert out.info.positions == 2
    assert out.info.notes == ["the text has 3 tokens: 2 positions, not 512"]


def _ref_dict() -> dict[str, Any]:
    return Reference("F16", None, "llamacpp", "built-in", "ab", (1, 2), 2, ()).to_dict() | {
        "positions": [{"top": [[5, -0.5]], "own": -1.0}]
    }


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"schema": "other"}, "no quality reference here"),
        ({"top_k": 0}, "top_k"),
        ({"top_k": True}, "top_k"),
        ({"tokens": [1, -2]}, "tokens"),
        ({"tokens": [1, 2, 3]}, "tokens: 3 ids for 1 positions"),
        ({"positions": [{"top": [[5, 0.5]]}]}, "positions[0].top[0]"),
        ({"positions": [{"top": [[5, -0.1], [6, -0.2], [7, -0.3]]}]}, "positions[0].top"),
        ({"positions": [{"top": [[5, -0.5]], "own": "x"}]}, "positions[0].own"),
        ({"label": 3}, "label"),
    ],
)
def test_a_bad_reference_names_the_field(tmp_path, change, field):
    path = tmp_path / "r.json"
    path.write_text(json.dumps(_ref_dict() | change))
    with pytest.raises(QualityRefError, match="r.json: .*" + re.escape(field)):
        load_reference(path)


def test_a_reference_is_found_inside_a_bench_results_file(tmp_path):
    path = tmp_path / "bench.json"
    path.write_text(
        json.dumps({"schema": "precmon.results/1", "variants": [{"label": "a"}, {"quality_reference": _ref_dict()}]})
    )
    assert load_reference(path).label == "F16"
    path.write_text(json.dumps({"schema": "precmon.results/1", "variants": [{"label": "a"}]}))
    with pytest.raises(QualityRefError, match="no quality reference here"):
        load_reference(path)
    path.write_text('{"schema": NaN}')
    with pytest.raises(QualityRefError, match="bare NaN"):
        load_reference(path)
    with pytest.raises(QualityRefError, match="no such file"):
        load_reference(tmp_path / "absent.json")


@pytest.mark.parametrize(
    "change",
    [
        {"top_k": "\x1b[2J" + "k" * 10_000},
        {"positions": [{"top": [[5, "\x1b[2J" + "x" * 10_000]]}]},
        {"positions": [{"top": [[5, -0.5]], "own": "\x1b]0;t\x07" + "o" * 10_000}]},
    ],
)
def test_a_bad_reference_value_is_shown_short_and_without_escapes(tmp_path, change):
    """The file's value in the error was its whole repr: 10,000 characters of a bad field made a
    10,000-character line (and repr keeps an OSC title's text); now at most 40, escapes gone."""
    path = tmp_path / "r.json"
    path.write_text(json.dumps(_ref_dict() | change))
    with pytest.raises(QualityRefError) as exc:
        load_reference(path)
    line = str(exc.value)
    assert len(line) < 200 + len(str(path)) and "\x1b" not in line and "\n" not in line


def test_a_real_llama_server_answer_parses_to_the_raw_distribution_and_the_forced_tokens_own_logprob():
    """Recorded from the test bed's llama-server serving the real SmolLM2 F16 (tests/fakes/shapes):
    forcing ' London' with the logit bias must not move the listed distribution (post_sampling_probs
    false: the raw one), and the forced token's own log-probability is its raw one."""
    from pathlib import Path

    shape = json.loads(
        (Path(__file__).parents[1] / "fakes" / "shapes" / "llamacpp_completion_nprobs_k20.json").read_text()
    )
    paris = parse_llamacpp(shape["forced_paris"]["answer"], forced=shape["forced_paris"]["forced"], top_k=20)
    london = parse_llamacpp(shape["forced_london"]["answer"], forced=shape["forced_london"]["forced"], top_k=20)
    assert len(paris.top) == 20 and [lp for _, lp in paris.top] == sorted((lp for _, lp in paris.top), reverse=True)
    assert paris.top[0][0] == london.top[0][0] == 7042  # ' Paris' stays the model's own top when London is forced
    assert math.isclose(paris.own_logprob, paris.top[0][1])
    assert london.own_logprob is not None and math.isclose(london.own_logprob, -4.3846, abs_tol=1e-3)
    assert 0.5 < sum(math.exp(lp) for _, lp in paris.top) < 1.0  # a real model: the top-20 hold most of it
