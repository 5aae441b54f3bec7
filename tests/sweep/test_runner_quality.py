"""The runner's quality step (docs/design.md §4 "Quality"): the baseline writes quality-ref.json,
the others score against it, and every way of having no reference is an n/a with its reason."""

from __future__ import annotations

import json

from precmon.core.schema import VariantResult
from precmon.sweep.quality_step import score_quality
from precmon.sweep.runner import SweepRunner
from precmon.sweep.spec import Variant, parse_spec
from tests.fakes.quality_stub import StubLlama

SPEC = """\
[defaults]
url = "http://127.0.0.1:1"
quality = true
quality_positions = 3
quality_top_k = 2
quality_convention = "from-start"
{extra}
[[variant]]
label = "F16"
precision = "fp16"
model = "a"

[[variant]]
label = "Q4"
precision = "int4"
model = "b"
"""


def result(label: str, status: str = "ok") -> VariantResult:
    return VariantResult(label=label, precision=None, model=None, status=status)


def runner(tmp_path, extra: str = "") -> SweepRunner:
    return SweepRunner(parse_spec(SPEC.format(extra=extra)), tmp_path)


def score(r: SweepRunner, v: Variant, server, res: VariantResult) -> None:
    """The quality step the runner gives `v` (its QualityJob), as execute.VariantRun runs it."""
    job = r._quality_job(v)
    assert job is not None
    score_quality(job, server, res, v.model, emit=lambda event: None, stop=r.stop)


def test_baseline_writes_the_reference_and_the_next_variant_scores_against_it(tmp_path):
    r = runner(tmp_path)
    f16, q4 = r.spec.variants
    base = result("F16")
    score(r, f16, StubLlama([1, 10, 11, 12, 13]), base)
    assert base.metrics["quality_kld_mean"] == 0.0 and base.quality.baseline == "F16"
    assert json.loads((tmp_path / "quality-ref.json").read_text())["label"] == "F16"
    other = result("Q4")
    score(r, q4, StubLlama([1, 10, 11, 12, 13], shift=0.1), other)
    assert other.metrics["quality_kld_mean"] > 0 and not other.errors


def test_a_variant_before_any_reference_is_na_with_the_reason(tmp_path):
    r = runner(tmp_path)
    q4 = result("Q4")
    score(r, r.spec.variants[1], StubLlama([1, 2, 3, 4]), q4)
    assert q4.metrics["quality_kld_mean"] is None
    assert q4.errors[0].startswith("quality: no reference from the baseline 'F16' (") and "no such file" in q4.errors[0]


def test_a_reference_of_another_baseline_is_not_used(tmp_path):
    score(runner(tmp_path), runner(tmp_path).spec.variants[0], StubLlama([1, 2, 3, 4]), result("F16"))
    r = runner(tmp_path, 'baseline = "Q4"')
    f16 = result("F16")
    score(r, r.spec.variants[0], StubLlama([1, 2, 3, 4]), f16)
    assert f16.errors == ["quality: quality-ref.json is from 'F16', the baseline is 'Q4'"]


def test_a_failed_plan_gets_no_quality_requests(tmp_path):
    r = runner(tmp_path)
    stub = StubLlama([1, 2, 3, 4])
    failed = result("F16", status="failed")
    score(r, r.spec.variants[0], stub, failed)
    assert stub.bodies == [] and failed.quality.reason == "the variant's plan failed"
    assert not (tmp_path / "quality-ref.json").exists()


def test_with_quality_on_the_baseline_runs_first_and_the_file_keeps_its_order(tmp_path):
    r = runner(tmp_path, 'baseline = "Q4"')
    seen: list[str] = []
    r._run_variant = lambda v: (seen.append(v.label), result(v.label))[1]  # type: ignore[method-assign]
    doc = json.loads(r.run().read_text())
    assert seen == ["Q4", "F16"]
    assert [v["label"] for v in doc["variants"]] == ["F16", "Q4"]
