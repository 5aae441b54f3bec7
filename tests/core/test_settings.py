"""The plan-settings table is the one owner: the flags, the sweep file, the results loader and
`BenchSettings` are generated from it, agree with it, and reject a value out of bounds in the
same words (literal messages below: the three front ends once had three wordings)."""

from __future__ import annotations

import argparse
import json

import pytest

from precmon.cli.common import UsageError, settings_from_args
from precmon.cli.parser import build_parser
from precmon.core import settings as plan
from precmon.core.schema import SCHEMA
from precmon.core.settings import BenchSettings
from precmon.measure import bench, checks
from precmon.measure.quality import settings as quality_run
from precmon.report.load import validate
from precmon.report.model import DocumentError
from precmon.servers import kinds
from precmon.sweep import spec
from precmon.sweep.spec import SpecError, parse_spec

BENCH = ["bench", "--url", "http://127.0.0.1:1"]


def _bench_actions() -> dict[str, argparse.Action]:
    parser = build_parser()
    (sub,) = parser._subparsers._group_actions
    return {a.dest: a for a in sub.choices["bench"]._actions}


def _stored(s: BenchSettings) -> str:
    d = s.to_dict()
    return json.dumps({k: d[k] for k in list(d)[:14]})


def test_results_files_store_the_same_settings_as_before():
    """`to_dict()` is what every results file holds: the keys it had, their order and values are
    unchanged (a new row appends its key after them)."""
    assert _stored(BenchSettings()) == (
        '{"output_tokens": 256, "decode_prompt_tokens": 128, "prefill_tokens": [512, 1024, 4096, 8192, 16384], '
        '"ttft_tokens": 8192, "repeats": 3, "warmup": 1, "concurrency": [], "long_context_tokens": [], '
        '"depth": [], "idle_s": 3.0, "timeout_s": 300.0, "target_ci_pct": null, "max_repeats": 10, '
        '"endpoint": "completions"}'
    )
    assert _stored(BenchSettings.quick()) == (
        '{"output_tokens": 64, "decode_prompt_tokens": 32, "prefill_tokens": [128, 512], "ttft_tokens": 512, '
        '"repeats": 2, "warmup": 1, "concurrency": [], "long_context_tokens": [], "depth": [], "idle_s": 1.0, '
        '"timeout_s": 120.0, "target_ci_pct": null, "max_repeats": 10, "endpoint": "completions"}'
    )
    assert bench.BenchSettings is BenchSettings  # the old import path still works


def test_every_default_and_quick_value_is_the_rows():
    default, quick = BenchSettings(), BenchSettings.quick()
    assert [s.name for s in plan.PLAN] == list(default.to_dict())
    for s in plan.PLAN:
        assert getattr(default, s.name) == s.default, s.name
        assert getattr(quick, s.name) == (s.default if s.quick is plan.SAME else s.quick), s.name
    assert default.prefill_tokens is not BenchSettings().prefill_tokens  # no shared mutable default


def test_the_quality_rows_are_the_scorers_settings(tmp_path):
    """QualitySettings takes its defaults from the rows and the flags and sweep keys through one
    loop over them (`with_rows`); the scorer keeps no bounds of its own."""
    q = {s.name: s for s in plan.QUALITY}
    assert quality_run.QualitySettings().positions == q["quality_positions"].default == 510  # two windows
    assert quality_run.QualitySettings().top_k == q["quality_top_k"].default == 20
    assert not hasattr(quality_run, "MAX_POSITIONS") and not hasattr(quality_run, "quality_problem")
    (tmp_path / "t.txt").write_text("some text", encoding="utf-8")
    args = build_parser().parse_args(BENCH + ["--quality-top-k", "7", "--quality-text", str(tmp_path / "t.txt")])
    qs = quality_run.with_rows(quality_run.QualitySettings(), vars(args))
    assert (qs.positions, qs.top_k, qs.text, qs.text_name) == (510, 7, "some text", "t.txt")
    qs = quality_run.with_rows(qs, {"quality": True, "quality_positions": 64, "quality_text": "t.txt"}, tmp_path)
    assert (qs.positions, qs.top_k, qs.text_name) == (64, 7, "t.txt")
    with pytest.raises(quality_run.QualityTextError, match=r"missing\.txt: no such file$"):
        quality_run.with_rows(qs, {"quality_text": "missing.txt"}, tmp_path)
    assert plan.ENDPOINTS == kinds.ENDPOINTS
    assert checks.MAX_SECONDS == plan.MAX_SECONDS and checks.MAX_STREAMS == plan.MAX_STREAMS


def test_every_row_is_a_bench_flag_with_its_default_in_the_help():
    actions = _bench_actions()
    for s in plan.SETTINGS:
        action = actions[s.dest]
        assert action.option_strings == [s.option]
        if s in plan.REPORT:  # also a top-level flag: `precmon --max-kld X bench` keeps X
            assert action.default is argparse.SUPPRESS
        else:
            assert action.default is (False if s.kind == plan.FLAG else None)  # so --quick's values can win
        if s.kind in (plan.INT, plan.INTS, plan.SECONDS, plan.PERCENT, plan.NUMBER):
            shown = s.shown if s.shown is not None else plan.show(s.default, s.kind)
            assert f"(default {shown}" in action.help.replace("%%", "%"), s.name
            assert action.metavar == s.metavar
    assert "(default 256)" in actions["output_tokens"].help
    assert "(default 512,1024,4096,8192,16384;" in actions["prefill_tokens"].help
    assert "(default 300 s)" in actions["timeout"].help
    assert actions["endpoint"].choices == plan.ENDPOINTS
    assert "--output-tokens 64" in actions["quick"].help and "--timeout 120" in actions["quick"].help


def test_flags_reach_the_plan_and_quick_fills_the_rest():
    assert settings_from_args(build_parser().parse_args(BENCH)) == BenchSettings()
    args = build_parser().parse_args(BENCH + ["--quick", "--repeats", "5", "--depth", "0,64", "--target-ci", "2"])
    s = settings_from_args(args)
    assert (s.repeats, s.depth, s.target_ci_pct, s.output_tokens) == (5, [0, 64], 2.0, 64)


def test_the_sweep_keys_are_the_rows():
    assert set(spec.BENCH_KEYS) == {s.name for s in plan.PLAN}
    assert set(spec.QUALITY_KEYS) == {
        "quality",
        "quality_text",
        "quality_positions",
        "quality_top_k",
        "quality_convention",
    }
    assert {s.name for s in plan.REPORT} <= set(spec.SWEEP_KEYS)  # [defaults] only: one budget a document
    assert spec.BENCH_KEYS["warmup"] == ((int,), "non-negative integer")
    assert spec.BENCH_KEYS["depth"] == ((list,), "list of integers >= 0")
    text = '[defaults]\nrepeats = 5\ndepth = [0, 64]\nurl = "http://127.0.0.1:1"\n[[variant]]\nlabel = "A"\nprecision = "fp16"\nmodel = "m"\n'
    s = parse_spec(text).variants[0].settings
    assert (s.repeats, s.depth, s.output_tokens) == (5, [0, 64], 256)


# (key, flag, the flag's text, the TOML value, the JSON value, the one message all of them give)
BOUNDS = [
    ("output_tokens", "--output-tokens", "1", "1", 1,
     "expected at least 2 (decode tok/s is timed from the first token to the last), got 1"),
    ("output_tokens", "--output-tokens", "0", "0", 0, "expected a positive integer, got 0"),
    ("repeats", "--repeats", "0", "0", 0, "expected a positive integer, got 0"),
    ("warmup", "--warmup", "-1", "-1", -1, "expected a non-negative integer, got -1"),
    ("warmup", "--warmup", "100000", "100000", 100000, "expected at most 10000, got 100000"),
    ("max_repeats", "--max-repeats", "0", "0", 0, "expected a positive integer, got 0"),
    ("ttft_tokens", "--ttft-tokens", "99999999999", "99999999999", 99999999999,
     "expected at most 10000000 tokens, got 99999999999"),
    ("concurrency", "--concurrency", "1,5000", "[1, 5000]", [1, 5000], "expected at most 4096 streams, got 5000"),
    ("prefill_tokens", "--prefill-tokens", "512,-1", "[512, -1]", [512, -1],
     "expected a non-empty list of positive integers, got [512, -1]"),
    ("depth", "--depth", "0,-1", "[0, -1]", [0, -1], "expected a non-empty list of integers >= 0, got [0, -1]"),
    ("timeout_s", "--timeout", "0", "0.0", 0.0, "expected a number of seconds > 0, got 0.0"),
    ("timeout_s", "--timeout", "1e8", "1e8", 1e8, "expected at most 1e+07 seconds, got 100000000.0"),
    ("idle_s", "--idle-s", "-0.5", "-0.5", -0.5, "expected a non-negative number of seconds, got -0.5"),
    ("target_ci_pct", "--target-ci", "101", "101.0", 101.0,
     "expected a percentage of the median, > 0 and <= 100, got 101.0"),
    ("target_ci_pct", "--target-ci", "0", "0.0", 0.0, "expected a percentage of the median, > 0 and <= 100, got 0.0"),
    ("timeout_s", "--timeout", "nan", "nan", None, "expected a finite number of seconds, got nan"),
    ("quality_top_k", "--quality-top-k", "101", "101", None, "expected an integer from 1 to 100, got 101"),
    ("quality_positions", "--quality-positions", "0", "0", None, "expected an integer from 1 to 100000, got 0"),
    ("max_kld", "--max-kld", "0", "0.0", None, "expected a positive number of nats, got 0.0"),  # tests/cli/test_max_kld.py: stored
    ("max_kld", "--max-kld", "inf", "inf", None, "expected a finite number of nats, got inf"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("key", "flag", "text", "toml", "stored", "message"), BOUNDS, ids=[f"{b[0]}={b[2]}" for b in BOUNDS]
)
def test_a_value_out_of_bounds_is_refused_in_the_same_words_everywhere(key, flag, text, toml, stored, message, capsys):
    with pytest.raises(SystemExit) as exc:  # the command line
        build_parser().parse_args([*BENCH, flag, text])
    assert exc.value.code == 2
    (line,) = capsys.readouterr().err.splitlines()  # one line (docs/design.md §3)
    assert line == f"precmon bench: error: argument {flag}: {message} (see precmon bench --help)"

    sweep = f'[defaults]\n{key} = {toml}\nurl = "http://127.0.0.1:1"\n[[variant]]\nlabel = "A"\nprecision = "fp16"\nmodel = "m"\n'
    with pytest.raises(SpecError) as err:  # the sweep file
        parse_spec(sweep)
    assert str(err.value) == f"<sweep>:2: [defaults] key '{key}': {message}"

    if stored is not None:  # a results file's `settings` (NaN cannot be in JSON; quality is not stored)
        with pytest.raises(DocumentError) as bad:
            validate({"schema": SCHEMA, "settings": {key: stored}, "variants": []}, "r.json")
        assert str(bad.value) == f"r.json: settings.{key}: {message}"
        assert checks.setting_problem(key, stored) == message
        args = build_parser().parse_args(BENCH)
        setattr(args, plan.BY_NAME[key].dest, stored)  # a Namespace a caller built
        with pytest.raises(UsageError, match=f"^{flag}: "):
            settings_from_args(args)


def test_the_loader_takes_the_stored_defaults_and_an_unplanned_part():
    doc = {"schema": SCHEMA, "settings": BenchSettings().to_dict() | {"order": "interleaved"}, "variants": []}
    validate(doc, "r.json")  # concurrency = [] is a plan without that part, not an empty list given
    validate({"schema": SCHEMA, "settings": BenchSettings.quick().to_dict(), "variants": []}, "r.json")
    with pytest.raises(DocumentError, match=r'^r\.json: settings\.repeats: expected an integer, got "3"$'):
        validate({"schema": SCHEMA, "settings": {"repeats": "3"}, "variants": []}, "r.json")
    with pytest.raises(DocumentError, match=r"^r\.json: settings\.endpoint: expected a string, got 5$"):
        validate({"schema": SCHEMA, "settings": {"endpoint": 5}, "variants": []}, "r.json")
    validate({"schema": SCHEMA, "settings": {"endpoint": "responses"}, "variants": []}, "r.json")  # a later one
