"""The smaller findings of issue 39 (#9), each as it was reproduced on main.

Look-alike labels passed as distinct and shared a log file; redaction ate words of error messages;
the llama-bench Markdown left `<script>` raw; a llama-benchy file with 0 tok/s was a measurement;
a 20-file compare squashed every cell to "…"; compare's headers cut the part that tells the
columns apart; "Environment differences" listed keys whose values are equal; `--format llama-bench`
did not look like a llama-bench post."""

from __future__ import annotations

import copy
import io
import json

import pytest
from report_helpers import DATA, load, typed

from precmon.cli.commands.report_cmd import compare_files, report_file
from precmon.report.analysis.fingerprint_diff import fingerprint_diff
from precmon.report.importers.llama_benchy import from_benchy
from precmon.report.render.llamabench import render_llama_bench
from precmon.report.render.terminal import render_terminal
from precmon.report.sections import build_compare, build_report
from precmon.sweep.spec import SpecError, parse_spec
from precmon.untrusted import redact

# ---- look-alike labels --------------------------------------------------------------------------


@pytest.mark.parametrize("other", ["A ", " A", "A\u200b", "Ａ", "A\u00a0"])
def test_labels_that_look_alike_are_refused(other):
    text = '[[variant]]\nlabel = "A"\nprecision = "x"\nurl = "http://h:1"\n'
    text += f'[[variant]]\nlabel = {json.dumps(other)}\nprecision = "y"\nurl = "http://h:1"\n'
    with pytest.raises(SpecError) as exc:
        parse_spec(text)
    assert "'A'" in str(exc.value) and ("looks the same as" in str(exc.value) or "file name" in str(exc.value))


def test_labels_that_differ_visibly_are_kept():
    text = "".join(
        f'[[variant]]\nlabel = "{label}"\nprecision = "x"\nurl = "http://h:1"\n' for label in ("A", "a", "A2", "B A")
    )
    assert [v.label for v in parse_spec(text).variants] == ["A", "a", "A2", "B A"]


# ---- redaction keeps words ----------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "/etc/passwd: is a folder",
        "cannot read /home/u/secret: no such file",
        "the token: expired at noon",
        "password: must be set in the env",
    ],
)
def test_redaction_keeps_the_words_of_an_error(text):
    assert redact(text) == text


@pytest.mark.parametrize(
    ("text", "kept"),
    [
        ("password=hunter2", "password=***"),
        ('{"api_key": "abcd1234"}', '{"api_key": "***"}'),
        ("token: eyJhbGciOiJIUzI1NiJ9.abc123", "token: ***"),
        ("secret:abc", "secret:***"),
        ("url?api_key=s3cr3t&x=1", "url?api_key=***&x=1"),
    ],
)
def test_credentials_are_still_redacted(text, kept):
    assert redact(text) == kept


# ---- llama-bench Markdown ------------------------------------------------------------------------


def _llama_bench(doc: dict) -> str:
    return render_llama_bench(build_report(typed(doc)))


def test_llama_bench_markdown_escapes_html():
    doc = copy.deepcopy(load("cpu_tiny.json"))
    doc["variants"][0]["model"] = "<script>alert(1)</script>"
    doc["variants"][0]["server"]["kind"] = "<b>x</b>"
    text = _llama_bench(doc)
    assert "<script>" not in text and "<b>" not in text and "&lt;script&gt;" in text


def test_llama_bench_looks_like_a_llama_bench_post():
    doc = copy.deepcopy(load("cpu_tiny.json"))
    v = doc["variants"][1]
    v["weights"] = {"file_type": "Q8_0", "main_type": "Q8_0", "architecture": "llama"}
    v["model_info"] = {"n_params": 134515008, "size_bytes": 143025408}
    for each in doc["variants"]:
        each["server"]["version"] = "b6000-0c1e570"
    v["server"]["launch_flags"] = {"threads": 2}
    text = _llama_bench(doc)
    head = text.splitlines()[0]
    assert "| threads |" in head or "| ngl |" in head
    assert "llama 135M Q8_0" in text
    assert "build: 0c1e570 (6000)" in text


# ---- llama-benchy: 0 tok/s is no measurement -----------------------------------------------------


def test_a_benchy_rate_of_zero_is_not_a_measurement():
    report = {"model": "m", "benchmarks": [{"prompt_size": 512, "context_size": 0, "response_size": 32,
              "tg_req_throughput": {"values": [0.0, 0.0]}, "pp_req_throughput": {"values": [0.0]},
              "e2e_ttft": {"values": [0.0]}}]}  # fmt: skip
    (v,) = from_benchy(report, "b.json").variants
    assert v.metrics.get("decode_tok_s") is None
    assert v.status == "failed" and "0 tok/s" in v.errors[0]


# ---- compare -------------------------------------------------------------------------------------


def _terminal(renderable, width: int) -> str:
    from rich.console import Console

    out = io.StringIO()
    Console(file=out, width=width, color_system=None).print(renderable)
    return out.getvalue()


def test_a_compare_too_wide_for_the_terminal_says_where_the_whole_table_is():
    docs = [typed(load("cpu_tiny.json")) for _ in range(20)]
    text = _terminal(render_terminal(build_compare(docs)), 120)
    assert "showing " in text and " of 60 columns" in text and "--format md" in text and "--format csv" in text
    assert "402.1" in text  # the columns shown are readable, not "…"


def test_compare_headers_keep_the_part_that_tells_columns_apart(tmp_path):
    a = copy.deepcopy(load("cpu_tiny.json"))
    b = copy.deepcopy(a)
    a["host"]["hostname"] = b["host"]["hostname"] = "vm"
    b["created"] = "2026-12-05T08:00:00Z"
    text = _terminal(render_terminal(build_compare([typed(a), typed(b)])), 200)
    assert "precmon comparison: vm · CPU in every column" in text.splitlines()[0]  # said once, in the title
    assert "F16 · 2026-11-29" in text and "F16 · 2026-12-05" in text and "vm · CPU · F16" not in text
    narrow = _terminal(render_terminal(build_compare([typed(a), typed(b)])), 80)
    assert "2026-11-29" in narrow and "vm · CPU ·…" not in narrow


def test_environment_differences_list_only_values_that_differ():
    a, b = copy.deepcopy(load("vm_h200.json")), copy.deepcopy(load("vm_h200.json"))
    a["host"]["fingerprint"]["gpus"][0]["power_limit_w"] = 700
    b["host"]["fingerprint"]["gpus"][0]["power_limit_w"] = 700.0
    b["host"]["fingerprint"]["id"] = "ffffffffffff"
    for doc in (a, b):
        for v in doc["variants"]:
            v["server"]["flags"] = {"model_ftype": v["label"]}
    b["variants"] = list(reversed(b["variants"]))  # the same servers, measured in another order
    keys = [d.key for d in fingerprint_diff([typed(a), typed(b)])]
    assert keys == ["fingerprint.id"]


def test_report_and_compare_still_work_on_the_files(tmp_path):
    out, err = io.StringIO(), io.StringIO()
    assert compare_files([DATA / "vm_h200.json", DATA / "vm_l40s.json"], stdout=out, stderr=err) == 0
    assert report_file(DATA / "cpu_tiny.json", "llama-bench", stdout=out, stderr=err) == 0
