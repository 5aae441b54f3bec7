"""sweep/fold.py: the one fold from sweep events to a results document, shared by the results store
(results.json) and the TUI (`LiveResults`)."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from precmon.core.schema import ResultsDoc, Run, VariantResult, to_json
from precmon.sweep.events import Log, RunLanded, VariantFinished, VariantStarted
from precmon.sweep.fold import PENDING, RUNNING, failed_measuring, fold, new_document, planned, saved, without_pending
from precmon.sweep.runner import SweepRunner
from precmon.sweep.spec import parse_spec
from precmon.tui.live import LiveResults
from tests.fakes.timed_server import Behaviour, TimedServer
from tests.sweep.test_interleave import spec_text


def _result(label: str, status: str = "ok", tok_s: float = 100.0) -> VariantResult:
    return VariantResult(label, "int8", "m", status=status, metrics={"decode_tok_s": tok_s})


def _shape(doc: ResultsDoc) -> list[tuple[str, str, int]]:
    return [(c.label, c.status, len(c.runs)) for c in doc.variants]


def test_a_start_a_run_and_the_finish_fill_one_column_without_changing_the_document_passed_in():
    doc0 = new_document()
    doc1 = fold(doc0, VariantStarted("Q8_0", 0, 1, "model", "int8", "m8"))
    doc2 = fold(doc1, RunLanded("Q8_0", Run("decode", 16, 16, decode_tok_s=300.0)))
    doc3 = fold(doc2, VariantFinished(_result("Q8_0"), Path()))
    assert doc0 == new_document() and doc0.variants == []
    assert _shape(doc1) == [("Q8_0", RUNNING, 0)] and doc1.variants[0].precision == "int8"
    assert _shape(doc2) == [("Q8_0", RUNNING, 1)] and doc2.variants[0].runs[0].decode_tok_s == 300.0
    assert _shape(doc3) == [("Q8_0", "ok", 0)] and doc3.variants[0].metrics["decode_tok_s"] == 100.0
    assert fold(doc3, Log("hello")) is doc3


def test_a_column_is_one_measurement_not_one_label():
    doc = fold(new_document(), VariantStarted("Q4", 0, 1, "bench"))
    doc = fold(doc, VariantFinished(_result("Q4"), Path()))
    doc = fold(doc, VariantStarted("Q4", 0, 1, "model"))
    doc = fold(doc, RunLanded("Q4", Run("decode", 16, 16, ok=False, reason="x")))
    doc = fold(doc, VariantFinished(_result("Q4", "failed"), Path()))
    assert _shape(doc) == [("Q4", "ok", 0), ("Q4", "failed", 0)]


def test_a_finished_variant_that_was_never_started_replaces_its_earlier_record():
    """The store's rule on --resume: one record per label, the newest one."""
    doc = fold(new_document(), VariantFinished(_result("A", "partial", 5.0), Path()))
    doc = fold(doc, VariantFinished(_result("B"), Path()))
    doc = fold(doc, VariantFinished(_result("A", "ok", 7.0), Path()))
    assert _shape(doc) == [("A", "ok", 0), ("B", "ok", 0)] and doc.variants[0].metrics["decode_tok_s"] == 7.0


def test_a_plan_starts_pending_and_its_columns_are_taken_over_dropped_or_failed():
    doc = planned(new_document(), [("F16", "fp16", "m1"), ("Q8_0", "int8", "m2")])
    doc = fold(doc, VariantStarted("Q8_0", 1, 2, "model"))
    assert _shape(doc) == [("F16", PENDING, 0), ("Q8_0", RUNNING, 0)] and doc.variants[1].model == "m2"
    doc = fold(doc, RunLanded("Q8_0", Run("decode", 16, 16)))
    assert _shape(without_pending(doc)) == [("Q8_0", RUNNING, 1)]
    broken = failed_measuring(doc, "OSError: disk full")
    assert _shape(broken) == [("F16", PENDING, 0), ("Q8_0", "failed", 1)]
    assert broken.variants[1].errors == ["OSError: disk full"] and saved(broken).variants == [broken.variants[1]]
    assert saved(doc).variants == [] and doc.variants[1].status == RUNNING  # nothing changed in place


def test_a_run_of_a_variant_whose_start_was_not_seen_starts_its_column():
    doc = fold(new_document(), RunLanded("X", Run("decode", 16, 16)))
    assert _shape(doc) == [("X", RUNNING, 1)]


@pytest.mark.parametrize("order", ["", 'order = "interleaved"'])
def test_the_tui_document_and_results_json_are_the_same_fold(tmp_path, order):
    """Whatever the order, the document the TUI folds from a sweep's events holds the very
    variants the store wrote to results.json."""
    events: list = []
    live = LiveResults()
    with TimedServer(Behaviour(itl_s=0.001)) as srv:
        spec = parse_spec(spec_text(srv.url, order=order))
        live.plan([(v.label, v.precision, v.model) for v in spec.variants])
        path = SweepRunner(spec, tmp_path, on_event=events.append).run()
    for ev in events:
        live.apply(copy.deepcopy(ev))
    written = json.loads(path.read_text())["variants"]
    assert [c["status"] for c in written] == ["ok"] * 3
    assert json.loads(json.dumps(to_json(live.exportable())["variants"])) == written
