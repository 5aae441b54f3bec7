"""`--format llama-bench`: llama-bench's own Markdown layout, numbers mapped from precmon's runs."""

from __future__ import annotations

import io
import json
import statistics

import pytest
from report_helpers import check_golden

from precmon.cli.commands.report_cmd import report_file
from precmon.core.schema import to_json
from precmon.report.export import EXPORTED, export_all, render
from precmon.report.render.llamabench import format_params, format_size, llama_test_name

# llama-bench 0.3.36 `-o md` on the tiny model, CPU backend (the first two lines)
LLAMA_BENCH_HEAD = (
    "| model                          |       size |     params | backend    | threads |            test |                  t/s |\n"
    "| ------------------------------ | ---------: | ---------: | ---------- | ------: | --------------: | -------------------: |\n"
)


def test_cpu_llama_bench_golden(cpu_doc):
    check_golden("cpu_tiny.llama-bench.md", render(cpu_doc, "llama-bench"))


def test_spark_llama_bench_golden_skips_the_failed_variant(spark_doc):
    text = render(spark_doc, "llama-bench")
    check_golden("spark_8b.llama-bench.md", text)
    failed = [v.label for v in spark_doc.variants if v.status == "failed"]
    assert failed and not any(label in text for label in failed)


def test_header_is_llama_benchs_layout(cpu_doc):
    assert render(cpu_doc, "llama-bench").startswith(LLAMA_BENCH_HEAD)


def test_rates_are_mean_and_sample_stdev_of_the_runs(cpu_doc):
    v = cpu_doc.variants[0]
    decode = [r.decode_tok_s for r in v.runs if r.phase == "decode" and r.ok]
    pp = [1000 / r.prefill_ms_per_token for r in v.runs if r.phase == "prefill" and r.target_prompt_tokens == 512]
    text = render(cpu_doc, "llama-bench")
    assert f"{statistics.fmean(decode):.2f} ± {statistics.stdev(decode):.2f} |" in text
    assert f"{statistics.fmean(pp):.2f} ± {statistics.stdev(pp):.2f} |" in text
    assert "tg256" in text and "pp512" in text and " @ d" not in text  # no depth in these files


def test_without_runs_the_stdev_comes_from_metrics_stats(cpu_doc):
    v = cpu_doc.variants[0]
    v.runs = []
    v.metrics = {"decode_tok_s": 400.0, "prefill_ms_per_token": {"512": 0.5}}
    v.metrics_stats = {"decode_tok_s": {"n": 3, "stdev": 4.0}, "prefill_ms_per_token:512": {"n": 3, "stdev": 0.01}}
    cpu_doc.variants = [v]
    text = render(cpu_doc, "llama-bench")
    assert "400.00 ± 4.00 |" in text
    assert "2000.00 ± 40.00 |" in text  # 1000/0.5, sd 1000 * 0.01 / 0.5²


def test_size_params_and_backend_from_the_server_model_info(cpu_doc):
    v = cpu_doc.variants[0]
    v.model_info = {"size_bytes": 39107584, "n_params": 60039680}
    row = render(cpu_doc, "llama-bench").splitlines()[2]
    assert row.startswith("| tiny-F16                       |  37.30 MiB |    60.04 M | llama.cpp  |")


def test_number_formats_follow_llama_bench():
    assert format_size(16060522496) == "14.96 GiB" and format_size(None) == "n/a"
    assert format_params(8_030_261_248) == "8.03 B" and format_params(0) == "n/a"
    assert llama_test_name("pp", 512) == "pp512" and llama_test_name("tg", 128, 0) == "tg128"
    assert llama_test_name("pp", 512, 4096) == "pp512 @ d4096"


def test_untrusted_model_name_cannot_break_the_table(cpu_doc):
    cpu_doc.variants[0].model = "evil|\x1b[31mred"
    row = render(cpu_doc, "llama-bench").splitlines()[2]
    assert "\x1b" not in row and "evil\\|" in row


def test_cli_writes_llama_bench_to_stdout(tmp_path, cpu_doc):
    path = tmp_path / "r.json"
    path.write_text(json.dumps(to_json(cpu_doc)), encoding="utf-8")
    out, err = io.StringIO(), io.StringIO()
    assert report_file(path, fmt="llama-bench", stdout=out, stderr=err) == 0, err.getvalue()
    assert out.getvalue().startswith(LLAMA_BENCH_HEAD)


@pytest.mark.parametrize("name", ["x.md", "x.llama-bench.md"])
def test_a_md_suffix_still_means_the_whole_report(tmp_path, cpu_doc, name):
    path = tmp_path / "r.json"
    path.write_text(json.dumps(to_json(cpu_doc)), encoding="utf-8")
    out = tmp_path / name
    assert report_file(path, out=out, stdout=io.StringIO(), stderr=io.StringIO()) == 0
    assert not out.read_text(encoding="utf-8").startswith(LLAMA_BENCH_HEAD)


def test_export_all_does_not_write_it(tmp_path, cpu_doc):
    assert "llama-bench" not in EXPORTED
    assert set(export_all(cpu_doc, tmp_path)) == {"json", "csv", "md", "html"}


def test_a_gguf_path_is_named_by_its_file(cpu_doc):
    cpu_doc.variants[0].model = "/root/models/tiny-F16.gguf"
    cpu_doc.variants[0].label = "KV q8_0"
    assert render(cpu_doc, "llama-bench").splitlines()[2].startswith("| tiny-F16 KV q8_0 ")
