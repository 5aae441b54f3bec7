"""Fuzz the report and compare loaders and renderers (issue 11: make the class hard to reintroduce).

Any document (results-shaped with wrong or extreme values, or arbitrary JSON, or arbitrary bytes)
through `precmon report` / `precmon compare` ends in rendered output (exit 0) or one input-error
line naming the file (exit 2), never another exception. Bounded: a few hundred examples, < 20 s.
"""

from __future__ import annotations

import io
import json
import tempfile
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from precmon.cli.commands.report_cmd import compare_files, report_file
from precmon.core import registry
from precmon.core.schema import SCHEMA
from precmon.report.export import render_report
from precmon.report.load import validate
from precmon.report.model import DocumentError
from precmon.report.render.terminal import render_terminal
from precmon.report.sections import build_compare, build_report

FUZZ = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
FORMATS = (None, "md", "html", "csv", "json", "llama-bench")

junk = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(10**6), 10**15)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3),
    max_leaves=6,
)


def with_junk(good: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return good | junk


def no_junk(good: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return good


hostile_text = st.sampled_from(["F16", "[/]", "<script>", "a|b", "`x`", "\x1b[31mred", "Q4_K_M [imatrix]", ""])
text = hostile_text | st.text(max_size=12)
size = st.sampled_from(["512", "4096", "1", "x", ""])
good_number = st.none() | st.integers(0, 10**6) | st.floats(0, 1e6, allow_nan=False)


def documents(mostly: Any) -> st.SearchStrategy[dict[str, Any]]:
    """Results-shaped documents; `mostly(s)` is `s` (valid values only) or `s | junk`."""
    number = mostly(good_number)

    def metric_value(m: registry.Metric) -> st.SearchStrategy[Any]:
        if m.shape == "scalar":
            return number
        if m.shape == "sized":
            return mostly(st.dictionaries(size, number, max_size=3))
        return st.dictionaries(size, mostly(st.fixed_dictionaries({m.field: number})), max_size=2)

    metrics = st.fixed_dictionaries({}, optional={m.metrics_key: metric_value(m) for m in registry.metrics()})
    phases = st.sampled_from(["decode", "prefill", "ttft", "concurrency", "long_context_decode", "warmup"])
    run = st.fixed_dictionaries(
        {"phase": phases},
        optional={
            "ok": mostly(st.booleans()),
            "prompt_tokens": number,
            "target_prompt_tokens": st.sampled_from([512, 4096]) | number,
            "output_tokens": number,
            "ttft_s": number,
            "decode_tok_s": number,
            "prefill_ms_per_token": number,
            "power_w": number,
            "energy_j": number,
            "extra": mostly(st.fixed_dictionaries({}, optional={"power_w_per_s": st.lists(number, max_size=4)})),
        },
    )
    variant = st.fixed_dictionaries(
        {"label": text},
        optional={
            "precision": mostly(text),
            "model": mostly(text),
            "status": mostly(st.sampled_from(["ok", "partial", "failed"])),
            "errors": mostly(st.lists(hostile_text, min_size=1, max_size=2)),
            "server": mostly(st.fixed_dictionaries({}, optional={"kind": text, "version": text})),
            "metrics": mostly(metrics),
            "runs": mostly(st.lists(run, max_size=4)),
            "model_size_bytes": number,
            "power_idle": st.fixed_dictionaries({}, optional={"power_w_per_s": st.lists(number, max_size=3)}),
        },
    )
    host = st.fixed_dictionaries(
        {}, optional={"hostname": text, "gpus": st.lists(st.fixed_dictionaries({"name": text}), max_size=2)}
    )
    settings_ = st.fixed_dictionaries(
        {}, optional={"prefill_tokens": st.lists(number, max_size=3) | number, "repeats": number}
    )
    return st.fixed_dictionaries(
        {"schema": st.just(SCHEMA), "variants": st.lists(variant, max_size=3)},
        optional={"created": mostly(text), "host": mostly(host), "settings": mostly(settings_)},
    )


document = documents(with_junk)
valid_document = documents(no_junk)


def _write(tmp: Path, name: str, data: bytes) -> Path:
    path = tmp / name
    path.write_bytes(data)
    return path


def _check(rc: int, out: str, err: str, cmd: str, path: Path) -> None:
    assert rc in (0, 2), (rc, err)
    if rc == 2:
        assert err.startswith(f"precmon {cmd}: {path}: ") and err.count("\n") == 1, err
        assert "\x1b" not in err
    else:
        assert err == "" and out and "\x1b" not in out


def _run_all(data: bytes) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = _write(Path(tmp), "r.json", data)
        for fmt in FORMATS:
            out, err = io.StringIO(), io.StringIO()
            rc = report_file(path, fmt, stdout=out, stderr=err)
            _check(rc, out.getvalue(), err.getvalue(), "report", path)
        out, err = io.StringIO(), io.StringIO()
        rc = compare_files([path, path], "md", stdout=out, stderr=err)
        _check(rc, out.getvalue(), err.getvalue(), "compare", path)


@FUZZ
@given(document)
def test_results_shaped_documents(doc):
    _run_all(json.dumps(doc, allow_nan=True).encode())


@FUZZ
@given(valid_document)
def test_valid_documents_through_the_cli(doc):
    _run_all(json.dumps(doc).encode())


@FUZZ
@given(junk)
def test_arbitrary_json(value):
    _run_all(json.dumps(value, allow_nan=True).encode())


@settings(max_examples=40, deadline=None)
@given(st.binary(max_size=64))
def test_arbitrary_bytes(data):
    _run_all(data)


@FUZZ
@given(valid_document)
def test_validated_documents_always_render(doc):
    """What `validate` accepts, every renderer renders (in process: no CLI in between)."""
    try:
        checked: Any = validate(json.loads(json.dumps(doc, allow_nan=True)), "r.json")
    except DocumentError as exc:
        assert str(exc).startswith("r.json: ") and "\n" not in str(exc)
        return
    report = build_report(checked)
    render_terminal(report)
    for fmt in ("md", "html", "csv", "json"):
        assert render_report(report, fmt)
    render_report(build_compare([checked, checked]), "md")
