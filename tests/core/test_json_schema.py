"""The published JSON Schema (docs/schema/precmon.results-1.json) is the model's, and it agrees with
precmon's own loader: every real results file passes both, and a damaged one fails both."""

from __future__ import annotations

import copy
import json
import os
from pathlib import Path

import jsonschema
import pytest

from precmon.core.schema import SCHEMA, json_schema
from precmon.report.load import validate
from precmon.report.model import DocumentError

ROOT = Path(__file__).resolve().parents[2]
PUBLISHED = ROOT / "docs" / "schema" / "precmon.results-1.json"


def _results_files() -> list[Path]:
    found = []
    for p in sorted([*ROOT.glob("docs/results/**/*.json"), *ROOT.glob("tests/**/data/*.json")]):
        try:
            doc = json.loads(p.read_text(encoding="utf-8"))
        except (ValueError, UnicodeDecodeError):
            continue
        if isinstance(doc, dict) and doc.get("schema") == SCHEMA:
            found.append(p)
    return found


RESULTS = _results_files()
VALIDATOR = jsonschema.Draft202012Validator(json_schema.results_schema())


def test_the_published_file_is_the_models_schema():
    text = json_schema.render()
    if os.environ.get("PRECMON_UPDATE_DOCS") == "1":
        PUBLISHED.write_text(text, encoding="utf-8")
    assert PUBLISHED.read_text(encoding="utf-8") == text, (
        "docs/schema/precmon.results-1.json differs from the model (PRECMON_UPDATE_DOCS=1 pytest tests/core rewrites it)"
    )
    jsonschema.Draft202012Validator.check_schema(json.loads(text))


def test_there_are_real_files_to_check():
    assert len(RESULTS) >= 20, [p.name for p in RESULTS]


@pytest.mark.parametrize("path", RESULTS, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_real_results_file_passes_the_schema_and_the_loader(path: Path):
    doc = json.loads(path.read_text(encoding="utf-8"))
    errors = [f"{e.json_path}: {e.message}" for e in VALIDATOR.iter_errors(doc)]
    assert errors == []
    validate(doc, path.name)


def _damaged(where: tuple, value: object) -> dict:
    doc = json.loads((ROOT / "tests" / "report" / "data" / "cpu_tiny.json").read_text(encoding="utf-8"))
    target = doc
    for key in where[:-1]:
        target = target[key]
    target[where[-1]] = value
    return doc


@pytest.mark.parametrize(
    "where,value",
    [
        (("variants", 0, "metrics", "decode_tok_s"), "fast"),
        (("variants", 0, "metrics", "decode_tok_s"), 1e308),
        (("variants", 0, "metrics", "ttft_s"), {"abc": 0.5}),
        (("variants", 0, "status"), "great"),
        (("variants", 0, "errors"), "boom"),
        (("variants", 0, "warnings"), [3]),
        (("variants", 0, "runs", 0, "prompt_tokens"), -5),
        (("variants", 0, "runs", 0, "ok"), "yes"),
        (("variants", 0, "runs", 0, "extra"), [1]),
        (("variants", 0, "power_idle"), {"power_w_per_s": ["x"]}),
        (("variants", 0, "label"), None),
        (("host", "gpus"), [{"name": 3}]),
        (("schema",), "precmon.results/2"),
    ],
)
def test_a_damaged_file_fails_the_schema_and_the_loader(where, value):
    doc = _damaged(where, value)
    assert list(VALIDATOR.iter_errors(doc)), "the published schema accepts it"
    with pytest.raises(DocumentError):
        validate(copy.deepcopy(doc), "r.json")


def test_an_invalid_run_keeps_what_the_server_said_in_both():
    doc = _damaged(("variants", 0, "runs", 0, "prompt_tokens"), -5)
    doc["variants"][0]["runs"][0]["ok"] = False
    assert list(VALIDATOR.iter_errors(doc)) == []
    validate(doc, "r.json")


def test_keys_a_newer_version_adds_pass_both():
    doc = _damaged(("variants", 0, "from_the_future"), {"a": [1, "x"]})
    doc["from_the_future"] = 1
    doc["variants"][0]["runs"][0].setdefault("extra", {})["new_key"] = "v"
    assert list(VALIDATOR.iter_errors(doc)) == []
    validate(doc, "r.json")
