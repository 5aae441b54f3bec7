"""`precmon compare` with llama-bench (`-o json`) and llama-benchy JSON files as columns
(report/importers/): a real llama-bench file made here from the cached build, a literal
llama-benchy 0.4.0 report, and the one-line errors for files that are none of the three."""

from __future__ import annotations

import io
import json
import statistics
import subprocess

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from precmon.cli.commands.report_cmd import compare_files
from precmon.core.schema import ResultsDoc, to_json
from precmon.report.importers.dispatch import load_any
from precmon.report.model import DocumentError

# llama-benchy 0.4.0 on the tiny model (trimmed to the fields it reads plus a few it does not)
BENCHY = {
    "version": "0.4.0",
    "timestamp": "2026-12-01 16:18:57Z",
    "model": "tiny",
    "max_concurrency": 1,
    "benchmarks": [
        {
            "concurrency": 1,
            "context_size": 0,
            "prompt_size": 128,
            "response_size": 64,
            "pp_req_throughput": {"mean": 191.9, "std": 58.4, "values": [119.48, 262.37, 193.83]},
            "tg_throughput": {"mean": 16.5, "std": 5.9, "values": [18.62, 8.48, 22.5]},
            "tg_req_throughput": {"mean": 16.5, "std": 5.9, "values": [18.62, 8.48, 22.5]},
            "e2e_ttft": {"mean": 585.3, "std": 193.1, "values": [846.85, 386.48, 522.61]},
            "throughput_over_time": None,
        },
        {"concurrency": 1, "context_size": 4096, "prompt_size": 128, "tg_throughput": {"values": [9.0]}},
    ],
}


def _compare(tmp_path, *docs, fmt="md"):
    paths = []
    for i, d in enumerate(docs):
        p = tmp_path / f"f{i}.json"
        body = to_json(d) if isinstance(d, ResultsDoc) else d
        p.write_text(body if isinstance(body, str) else json.dumps(body), encoding="utf-8")
        paths.append(p)
    out, err = io.StringIO(), io.StringIO()
    return compare_files(paths, fmt=fmt, stdout=out, stderr=err), out.getvalue(), err.getvalue()


def test_benchy_report_becomes_a_column_beside_precmon(tmp_path, cpu_doc):
    rc, md, err = _compare(tmp_path, cpu_doc, BENCHY)
    assert rc == 0, err
    assert "llama-benchy tiny" in md and "ci-runner · CPU · F16" in md
    doc = load_any(tmp_path / "f1.json")
    (v,) = doc.variants
    assert v.metrics["decode_tok_s"] == 18.62  # the median request
    assert v.metrics["prefill_ms_per_token"]["128"] == pytest.approx(1000 / 193.83)
    assert v.metrics["ttft_s"]["128"] == pytest.approx(0.52261)
    assert any("d4096" in w for w in v.warnings)  # depth entries are named, not mixed in


def test_benchy_requests_is_the_one_reader_bench_uses():
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "bench"))
    import peer_parse

    from precmon.report.importers import llama_benchy

    assert peer_parse.benchy_requests is llama_benchy.benchy_requests
    assert llama_benchy.benchy_requests(BENCHY)["decode_tok_s"] == [18.62, 8.48, 22.5]


@pytest.mark.parametrize(
    ("body", "says"),
    [
        ({"a": 1}, "not a precmon results file, a llama-bench -o json file or a llama-benchy JSON report"),
        ([1, 2], "not a precmon results file, a llama-bench"),
        ([{"n_prompt": 512, "n_gen": 0, "avg_ts": "fast"}], "[0].avg_ts: expected a number"),
        ([{"n_prompt": 512, "n_gen": 0, "avg_ts": 1.0, "samples_ts": [1.0, -2]}], "[0].samples_ts[1]: expected"),
        ({"benchmarks": [{"tg_req_throughput": {"values": ["x"]}}]}, "benchmarks[0].tg_req_throughput.values[0]"),
    ],
)
def test_a_file_of_no_known_kind_or_with_a_bad_field_is_one_line(tmp_path, cpu_doc, body, says):
    rc, _, err = _compare(tmp_path, cpu_doc, body)
    assert rc == 2
    assert err.count("\n") == 1 and "f1.json: " in err and says in err, err


def test_llama_bench_depth_tests_are_depth_runs_and_pg_tests_are_left_out(tmp_path):
    tests = [
        {"n_prompt": 512, "n_gen": 0, "n_depth": 0, "avg_ts": 100.0, "samples_ts": [90.0, 110.0], "type_k": "f16"},
        {"n_prompt": 512, "n_gen": 0, "n_depth": 4096, "avg_ts": 50.0, "samples_ts": [50.0], "type_k": "f16"},
        {"n_prompt": 0, "n_gen": 128, "n_depth": 0, "avg_ts": 20.0, "samples_ts": [19.0, 21.0], "type_k": "f16"},
        {"n_prompt": 0, "n_gen": 128, "n_depth": 4096, "avg_ts": 12.0, "samples_ts": [11.0, 13.0], "type_k": "f16"},
        {"n_prompt": 512, "n_gen": 128, "n_depth": 0, "avg_ts": 30.0, "samples_ts": [30.0], "type_k": "f16"},
    ]
    p = tmp_path / "lb.json"
    p.write_text(json.dumps(tests), encoding="utf-8")
    doc = load_any(p)
    (v,) = doc.variants
    assert v.metrics["decode_tok_s"] == 20.0
    assert v.metrics["prefill_ms_per_token"] == {"512": pytest.approx((1000 / 90 + 1000 / 110) / 2)}
    assert v.metrics["decode_tok_s_at_depth"] == {"0": 20.0, "4096": 12.0}
    assert v.metrics["prefill_ms_per_token_at_depth"]["4096"] == {"512": 20.0}  # 1000 / 50 t/s
    assert doc.settings["depth"] == [0, 4096]
    assert v.warnings == ["llama-bench test pp512+tg128: no precmon row; left out"]
    rc, table, err = _compare(tmp_path, json.dumps(tests), fmt="llama-bench")  # back out as llama-bench's rows
    assert rc == 0, err
    assert [line.split("|")[6].strip() for line in table.splitlines()[2:6]] == [
        "pp512",
        "tg128",
        "pp512 @ d4096",
        "tg128 @ d4096",
    ]


@pytest.mark.integration
def test_compare_with_a_real_llama_bench_json(llama_build, tiny_models, tmp_path, cpu_doc):
    model = tiny_models["Q4_K_M"]
    argv = [str(llama_build.tool("llama-bench")), "-m", str(model), "-p", "64", "-n", "16", "-r", "2", "-t", "2"]
    proc = subprocess.run([*argv, "-o", "json"], capture_output=True, text=True, timeout=300, check=False)
    assert proc.returncode == 0, proc.stderr[-500:]
    tests = json.loads(proc.stdout)
    rc, md, err = _compare(tmp_path, cpu_doc, proc.stdout)
    assert rc == 0, err
    assert "llama-bench" in md and "Prefill (64 prompt)" in md
    (v,) = load_any(tmp_path / "f1.json").variants
    tg = next(t for t in tests if t["n_gen"] == 16)
    decode = [r.decode_tok_s for r in v.runs if r.phase == "decode"]
    assert decode == tg["samples_ts"] and v.metrics["decode_tok_s"] == statistics.median(tg["samples_ts"])
    assert v.model_size_bytes == model.stat().st_size or v.model_size_bytes == tg["model_size"]
    rc, table, err = _compare(tmp_path, proc.stdout, fmt="llama-bench")  # and back out as llama-bench's table
    assert rc == 0, err
    row = next(line for line in table.splitlines() if "tg16" in line)
    mean, sd = (float(x) for x in row.rstrip(" |").rsplit("|", 1)[1].split("±"))
    assert mean == pytest.approx(tg["avg_ts"], abs=0.006) and sd == pytest.approx(tg["stddev_ts"], abs=0.006)
    assert "pp64" in table and row.startswith(f"| {tg['model_type']}")  # llama-bench's own numbers and name


def test_load_any_reads_a_precmon_file_as_before(tmp_path, cpu_doc):
    p = tmp_path / "r.json"
    p.write_text(json.dumps(to_json(cpu_doc)), encoding="utf-8")
    assert load_any(p) == cpu_doc
    p.write_text(json.dumps({**to_json(cpu_doc), "schema": "other/1"}), encoding="utf-8")
    with pytest.raises(DocumentError, match="not a precmon results file"):
        load_any(p)


_num = st.integers(0, 4096) | st.integers(1, 64) | st.floats(0, 1e4)
_junk = st.none() | st.booleans() | st.integers(-5, 10**16) | st.floats() | st.text(max_size=6)
_val = st.one_of(_num, _num, _num, _junk, st.lists(_num | _junk, max_size=3))
_lb_test = st.fixed_dictionaries(
    {"n_prompt": _val, "n_gen": _val, "avg_ts": _val},
    optional={"n_depth": _val, "samples_ts": _val, "model_size": _val, "model_type": _val, "type_k": _val},
)
_benchy = st.fixed_dictionaries(
    {
        "benchmarks": st.lists(
            st.fixed_dictionaries(
                {"tg_req_throughput": _val | st.fixed_dictionaries({"values": _val})},
                optional={
                    "prompt_size": _val,
                    "context_size": _val,
                    "concurrency": _val,
                    "pp_req_throughput": _val,
                    "e2e_ttft": _val,
                },
            ),
            min_size=1,
            max_size=3,
        )
    },
    optional={"model": _val, "timestamp": _val, "version": _val},
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(_lb_test, min_size=1, max_size=4) | _benchy)
def test_any_peer_file_is_a_document_or_one_line_error(tmp_path, body):
    p = tmp_path / "peer.json"
    p.write_text(json.dumps(body), encoding="utf-8")
    try:
        doc = load_any(p)
    except DocumentError as exc:
        assert str(exc).startswith(f"{p}: ") and "\n" not in str(exc)
        assert "variants[" not in str(exc), exc  # a field of the file, not of the converted document
        return
    for fmt in ("md", "llama-bench", "csv"):
        rc, _, err = _compare(tmp_path, doc, fmt=fmt)
        assert rc == 0, err


def test_llama_bench_variants_that_differ_only_in_v_type_or_file_get_distinct_labels(tmp_path):
    """Two model files of one model type, or one K type with two V types, were two columns of
    the same label (the V type and the file were not in it): now each label names its variant."""
    t = {"model_type": "llama 1B Q4_0", "n_prompt": 512, "n_gen": 0, "avg_ts": 100.0, "type_k": "f16"}
    tests = [
        dict(t, model_filename="/m/a.gguf", type_v="f16"),
        dict(t, model_filename="/m/b.gguf", type_v="f16"),
        dict(t, model_filename="/m/a.gguf", type_v="q8_0"),
    ]
    (tmp_path / "lb.json").write_text(json.dumps(tests), encoding="utf-8")
    labels = [v.label for v in load_any(tmp_path / "lb.json").variants]
    assert labels == [
        "llama-bench llama 1B Q4_0",
        "llama-bench llama 1B Q4_0 (b.gguf)",
        "llama-bench llama 1B Q4_0 KV f16/q8_0",
    ]


@pytest.mark.parametrize("n_tests", [1, 2])
def test_llama_bench_jsonl_is_one_line_that_says_to_use_json(tmp_path, n_tests):
    """`llama-bench -o jsonl` (one test object a line) is a plausible mistake for `-o json`: it
    was 'not JSON (line 2: Extra data)' or 'not ... a llama-bench -o json file'; now it says so."""
    t = {"model_type": "llama 1B Q4_0", "n_prompt": 512, "n_gen": 0, "avg_ts": 100.0, "model_filename": "a.gguf"}
    path = tmp_path / "lb.jsonl"
    path.write_text("".join(json.dumps(t) + "\n" for _ in range(n_tests)), encoding="utf-8")
    with pytest.raises(DocumentError) as exc:
        load_any(path)
    line = str(exc.value)
    assert line.startswith(str(path)) and "-o jsonl" in line and line.endswith("with -o json")


def test_a_benchy_report_without_response_size_keeps_its_tg_row(tmp_path):
    """llama-benchy's decode rows without `response_size`: the llama-bench format dropped the tg row
    (its runs had no length); it is `tg?` now, the decode rate kept."""
    import copy

    report = copy.deepcopy(BENCHY)
    del report["benchmarks"][0]["response_size"]
    code, out, err = _compare(tmp_path, report, fmt="llama-bench")
    assert code == 0, err
    tg = [line for line in out.splitlines() if line.replace(" ", "").count("|tg")]
    assert len(tg) == 1 and "tg?" in tg[0] and "16.53" in tg[0], out
