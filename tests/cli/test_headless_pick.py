"""A headless sweep (and so `precmon demo --headless`, which runs one) ends as `precmon report`'s
table does: with the pick line under it, within the sweep's `max_kld` (issue 29 item 4)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from precmon import api
from precmon.cli.commands import sweep_cmd
from precmon.core.schema import ResultsDoc, from_json
from precmon.sweep.spec import parse_spec

CPU_DOC = Path(__file__).resolve().parents[1] / "report" / "data" / "cpu_tiny.json"
SPEC = '[defaults]\nurl = "http://127.0.0.1:1"\n{extra}\n[[variant]]\nlabel = "F16"\nprecision = "fp16"\nmodel = "m"\n'


def _doc(scores: dict[str, tuple[float, float]] | None, max_kld: float | None = None) -> dict[str, Any]:
    doc = json.loads(CPU_DOC.read_text(encoding="utf-8"))
    for v in doc["variants"]:
        if scores:
            kld, top1 = scores[v["label"]]
            v["metrics"].update(quality_kld_mean=kld, quality_top1_agree=top1)
            v["quality"] = {"baseline": "F16", "positions": 512, "top_k": 20, "baseline_topk_mass": 0.97}
    if max_kld is not None:
        doc["settings"]["max_kld"] = max_kld
    return doc


def _headless(tmp_path: Path, monkeypatch, doc: dict[str, Any]) -> int:
    """run_headless over a sweep that has measured `doc` already (no server, no meter)."""

    def measured(spec, *, out, **kw: Any) -> api.Ended:
        return api.Ended(from_json(ResultsDoc, doc), tmp_path / "results.json", tmp_path / "journal.jsonl", False, None)

    monkeypatch.setattr(sweep_cmd.api, "sweep", measured)
    monkeypatch.setattr(sweep_cmd, "open_meter", lambda enabled, power_from=(): (None, None))
    return sweep_cmd.run_headless(parse_spec(SPEC.format(extra="")), tmp_path)


def _printed(capsys) -> str:
    return " ".join(capsys.readouterr().out.split())


def test_the_table_ends_with_the_pick_within_the_sweeps_budget(tmp_path, monkeypatch, capsys):
    scores = {"F16": (0.0, 1.0), "Q8_0": (0.002, 0.98), "Q4_K_M": (0.03, 0.92)}
    assert _headless(tmp_path, monkeypatch, _doc(scores)) == 0
    out = _printed(capsys)
    assert "Pick Q4_K_M: fastest decode within KL ≤ 0.05 (also within: Q8_0 27% slower, F16 47% slower)" in out
    assert out.index("Decode") < out.index("Pick Q4_K_M")  # under the table
    _headless(tmp_path, monkeypatch, _doc(scores, max_kld=0.01))  # the sweep's --max-kld / max_kld
    assert "Pick Q8_0: fastest decode within KL ≤ 0.01" in _printed(capsys)


def test_without_quality_the_table_ends_as_before(tmp_path, monkeypatch, capsys):
    _headless(tmp_path, monkeypatch, _doc(None))
    out = _printed(capsys)
    assert "Decode" in out and "Pick" not in out and "No pick" not in out
