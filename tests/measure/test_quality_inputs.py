"""Quality inputs are checked (issue 39 #8): a reference whose listed probabilities summed far above
1, or listed a token twice, was accepted; a 2-token text scored one position and showed "KL 0,
same top 100%" with its "1 position, not 512" note only in the JSON; `report --max-kld` on a file
without quality was silently ignored."""

from __future__ import annotations

import copy
import io
import json
import math

import pytest

from precmon.cli.commands.report_cmd import report_file
from precmon.core.schema import VariantResult
from precmon.measure.quality.reference import SCHEMA_FROM_START, QualityRefError, Reference, load_reference
from precmon.measure.quality.run import QualitySettings, measure_quality
from precmon.report.render.terminal import render_terminal
from precmon.report.sections import build_report
from tests.fakes.quality_stub import StubLlama
from tests.hostile.files import GOOD_RESULTS


def ref_doc(top: list[list[float]]) -> dict:
    return {
        "schema": SCHEMA_FROM_START, "label": "F16", "model": None, "kind": "llamacpp", "text": "built-in",
        "text_sha256": "0" * 64, "top_k": 4, "tokens": [1, 2], "positions": [{"top": top, "own": -0.5}],
    }  # fmt: skip


def test_a_reference_that_is_a_distribution_loads():
    ref = Reference.from_dict(ref_doc([[5, math.log(0.6)], [6, math.log(0.39)]]), "r")
    assert ref.positions[0].top[0][0] == 5


def test_probabilities_that_sum_above_one_are_refused(tmp_path):
    path = tmp_path / "quality-ref.json"
    path.write_text(json.dumps(ref_doc([[5, math.log(0.9)], [6, math.log(0.8)]])))
    with pytest.raises(QualityRefError) as exc:
        load_reference(path)
    assert str(exc.value) == (
        f"{path}: reference.positions[0].top: its probabilities sum to 1.7, more than 1: not a distribution"
    )


def test_a_token_listed_twice_is_refused():
    with pytest.raises(QualityRefError, match=r"r.positions\[0\].top\[1\]: token 5 listed twice"):
        Reference.from_dict(ref_doc([[5, math.log(0.3)], [5, math.log(0.3)]]), "r")


def _scored(tokens: list[int], positions: int) -> VariantResult:
    result = VariantResult(label="F16", status="ok")
    settings = QualitySettings(positions=positions, top_k=2, target_mass=0.0, convention="from-start")
    measure_quality(StubLlama(tokens), settings, label="F16", model=None, reference=None).apply(result)
    return result


def test_too_few_positions_for_an_estimate_is_a_warning():
    result = _scored([1, 10], positions=512)
    assert result.quality is not None and result.quality.positions == 1
    assert result.warnings == [
        "quality-few: 1 position scored, not 512 (the text or its reference holds no more): its KL and top-1 agreement are no estimate"
    ]


def test_as_many_positions_as_asked_is_no_warning():
    assert _scored([1, 10, 11, 12], positions=3).warnings is None


def test_the_warning_is_on_the_terminal_report():
    from precmon.core.schema import ResultsDoc, from_json

    doc = copy.deepcopy(GOOD_RESULTS)
    doc["variants"][0]["warnings"] = ["quality-few: 1 position scored, not 512 (the text is too short): x"]
    out = io.StringIO()
    from precmon.report.render.terminal import table_console

    table_console(file=out).print(render_terminal(build_report(from_json(ResultsDoc, doc))))
    assert "quality-few: 1 position scored, not 512" in out.getvalue()


def test_report_max_kld_on_a_file_without_quality_says_so(tmp_path):
    path = tmp_path / "r.json"
    path.write_text(json.dumps(GOOD_RESULTS))
    out, err = io.StringIO(), io.StringIO()
    assert report_file(path, "md", max_kld=0.1, stdout=out, stderr=err) == 0
    assert err.getvalue() == (
        f"precmon report: --max-kld 0.1: {path} has no quality scores (KL divergence), so it judges nothing here\n"
    )
    err = io.StringIO()
    assert report_file(path, "md", stdout=io.StringIO(), stderr=err) == 0 and err.getvalue() == ""
