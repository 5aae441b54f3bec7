"""Sweep files: a malformed one names the file, the line and the key."""

from __future__ import annotations

import subprocess
import sys

import pytest

from precmon.sweep.spec import SpecError, load_spec, parse_spec

GOOD = """\
[defaults]
url = "http://127.0.0.1:8080"
output_tokens = 64
prefill_tokens = [128, 512]
repeats = 2

[[variant]]
label = "F16"
precision = "fp16"
model = "tiny-F16"

[[variant]]
label = "FP8"
precision = "fp8"
launch = ["vllm", "serve", "m", "--quantization", "fp8", "--port", "8001"]
url = "http://127.0.0.1:8001"
ready_timeout_s = 900
repeats = 5
"""


def test_good_spec_parses_with_defaults_and_overrides():
    spec = parse_spec(GOOD)
    f16, fp8 = spec.variants
    assert (f16.strategy, f16.model, f16.url) == ("model", "tiny-F16", "http://127.0.0.1:8080")
    assert f16.settings.output_tokens == 64 and f16.settings.prefill_tokens == [128, 512]
    assert f16.settings.repeats == 2 and fp8.settings.repeats == 5
    assert fp8.strategy == "launch" and fp8.launch[0] == "vllm" and fp8.ready_timeout_s == 900
    assert fp8.model is None


@pytest.mark.parametrize(
    "edit, expected",
    [
        (
            ('precision = "fp16"', 'precison = "fp16"'),
            "<sweep>:9: variant #1 key 'precison': unknown key (did you mean 'precision'?)",
        ),
        (
            ("repeats = 2", 'repeats = "two"'),
            "<sweep>:5: [defaults] key 'repeats': expected positive integer, got str 'two'",
        ),
        (("prefill_tokens = [128, 512]", "prefill_tokens = [128, -5]"), "<sweep>:4: [defaults] key 'prefill_tokens'"),
        (('label = "FP8"\n', ""), "<sweep>:12: variant #2: missing required key 'label'"),
        (
            ('model = "tiny-F16"', 'modle = "tiny-F16"'),
            "<sweep>:10: variant #1 key 'modle': unknown key (did you mean 'model'?)",
        ),
        (("repeats = 5", "repeats = 0"), "<sweep>:18: variant #2 key 'repeats': expected a positive integer, got 0"),
        (('url = "http://127.0.0.1:8001"', 'url = "localhost:8001"'), "<sweep>:16: variant #2 key 'url'"),
        (('launch = ["vllm"', 'launch = [1, "vllm"'), "<sweep>:15: variant #2 key 'launch'"),
        # an empty label became "server" in the results, so --resume never found it done
        (('label = "F16"', 'label = ""'), "<sweep>:8: variant #1 key 'label': expected a non-empty label"),
        (('label = "F16"', 'label = "  "'), "<sweep>:8: variant #1 key 'label': expected a non-empty label"),
    ],
)
def test_malformed_specs_name_line_and_key(edit, expected):
    old, new = edit
    assert old in GOOD
    with pytest.raises(SpecError) as exc:
        parse_spec(GOOD.replace(old, new, 1))
    assert str(exc.value).startswith(expected), str(exc.value)


def test_variant_needs_a_target_and_labels_are_unique():
    with pytest.raises(SpecError, match="needs one of 'model', 'url' or 'launch'"):
        parse_spec('[[variant]]\nlabel = "a"\nprecision = "fp16"\n')
    with pytest.raises(SpecError, match="duplicate label"):
        parse_spec(GOOD.replace('label = "FP8"', 'label = "F16"'))
    with pytest.raises(SpecError, match="needs its own 'url'"):
        parse_spec('[[variant]]\nlabel = "a"\nprecision = "x"\nlaunch = ["srv"]\n')


def test_not_toml_and_unknown_tables():
    with pytest.raises(SpecError, match="not valid TOML"):
        parse_spec("[[variant]\nlabel=")
    with pytest.raises(SpecError, match="unknown top-level key 'varient'"):
        parse_spec('[[varient]]\nlabel = "a"\n')
    with pytest.raises(SpecError, match="no \\[\\[variant\\]\\] tables"):
        parse_spec("[defaults]\nrepeats = 1\n")


def test_missing_file(tmp_path):
    with pytest.raises(SpecError, match="no such file"):
        load_spec(tmp_path / "nope.toml")


def test_cli_exit_2_with_one_line(tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text(GOOD.replace("repeats = 5", "repeats = 5\ncolour = 'red'"))
    proc = subprocess.run(
        [sys.executable, "-m", "precmon.cli", "sweep", str(bad), "--check"], capture_output=True, text=True
    )
    assert proc.returncode == 2
    assert proc.stderr.strip() == (f"precmon: {bad}:19: variant #2 key 'colour': unknown key")
    good = tmp_path / "good.toml"
    good.write_text(GOOD)
    proc = subprocess.run(
        [sys.executable, "-m", "precmon.cli", "sweep", str(good), "--check"], capture_output=True, text=True
    )
    assert proc.returncode == 0 and "2 variants" in proc.stdout


def test_variant_must_be_a_table_and_seconds_non_negative():
    with pytest.raises(SpecError, match="must be \\[\\[variant\\]\\] tables"):
        parse_spec('variant = ["x"]\n')
    with pytest.raises(SpecError, match="key 'idle_s': expected a non-negative number of seconds"):
        parse_spec(GOOD.replace("repeats = 2", "repeats = 2\nidle_s = -1"))


def test_defaults_model_applies_to_variants_that_name_none():
    spec = parse_spec('[defaults]\nurl = "http://h:1"\nmodel = "m"\n[[variant]]\nlabel = "a"\nprecision = "x"\n')
    assert spec.variants[0].model == "m" and spec.variants[0].strategy == "model"


def test_cli_refuses_to_overwrite_a_finished_sweep(tmp_path):
    spec = tmp_path / "s.toml"
    spec.write_text(GOOD)
    out = tmp_path / "out"
    out.mkdir()
    (out / "results.json").write_text("{}")
    proc = subprocess.run(
        [sys.executable, "-m", "precmon.cli", "sweep", str(spec), "--headless", "--out", str(out)],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 2 and "add --resume" in proc.stderr
    proc = subprocess.run(
        [sys.executable, "-m", "precmon.cli", "sweep", str(spec), "--headless", "--out", str(out), "--resume"],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 2 and "cannot be continued" in proc.stderr
    assert "Traceback" not in proc.stderr


@pytest.mark.parametrize(
    "line,expected",
    [
        ("timeout_s = nan", "expected a finite number of seconds, got nan"),
        ("timeout_s = inf", "expected a finite number of seconds, got inf"),
        ("timeout_s = 0", "expected a number of seconds > 0, got 0"),
        ("timeout_s = -3", "expected a non-negative number of seconds, got -3"),
        ("idle_s = -inf", "expected a non-negative number of seconds"),
        ("ready_timeout_s = 0.0", "expected a number of seconds > 0, got 0.0"),
        ("output_tokens = 1", "expected at least 2"),
        ("output_tokens = 99999999999", "expected at most 10000000 tokens"),
        ("repeats = 0", "expected a positive integer, got 0"),
        ("warmup = 100000", "expected at most 10000"),
        ("target_ci_pct = nan", "expected a percentage of the median, > 0 and <= 100, got nan"),
        ("target_ci_pct = 0", "expected a percentage of the median, > 0 and <= 100, got 0"),
        ("target_ci_pct = -2.5", "expected a percentage of the median, > 0 and <= 100, got -2.5"),
        ('target_ci_pct = "5%"', "expected percentage of the median"),
        ("max_repeats = 0", "expected a positive integer, got 0"),
        ("max_repeats = -1", "expected a positive integer, got -1"),
        ("max_repeats = 100000", "expected at most 10000"),
        ("max_repeats = 2.5", "expected positive integer, got float 2.5"),
        ("concurrency = [1, 100000]", "expected at most 4096 streams"),
        ("prefill_tokens = [128, 99999999999]", "expected at most 10000000 tokens"),
    ],
)
def test_impossible_numbers_name_line_and_key(line, expected):
    key = line.split(" = ")[0]
    base = '[[variant]]\nlabel = "a"\nprecision = "x"\nurl = "http://127.0.0.1:1"\n'
    for text, where in (
        (base + line + "\n", "<sweep>:5: variant #1"),
        ("[defaults]\n" + line + "\n" + base, "<sweep>:2: [defaults]"),
    ):
        with pytest.raises(SpecError) as exc:
            parse_spec(text)
        msg = str(exc.value)
        assert msg.startswith(f"{where} key '{key}': ") and expected in msg, msg


def test_check_refuses_a_nan_timeout_with_exit_2(tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text(GOOD.replace("repeats = 2", "repeats = 2\ntimeout_s = nan"))
    proc = subprocess.run(
        [sys.executable, "-m", "precmon.cli", "sweep", str(bad), "--check"], capture_output=True, text=True
    )
    assert proc.returncode == 2
    assert proc.stderr.strip() == (
        f"precmon: {bad}:6: [defaults] key 'timeout_s': expected a finite number of seconds, got nan"
    )


def test_cooldown_in_a_variant_is_refused_not_ignored():
    """`cooldown_s` is one pause for the whole sweep: in a [[variant]] it used to be accepted and
    silently ignored."""
    text = '[defaults]\nurl = "http://127.0.0.1:8080"\n\n[[variant]]\nlabel = "A"\nprecision = "fp16"\nmodel = "m"\ncooldown_s = 5\n'
    with pytest.raises(SpecError, match=r":8: variant #1 key 'cooldown_s': belongs in \[defaults\]"):
        parse_spec(text)
    assert (
        parse_spec(
            text.replace("cooldown_s = 5\n", "").replace("[defaults]\n", "[defaults]\ncooldown_s = 5\n")
        ).cooldown_s
        == 5
    )


def test_impossible_cooldown_names_line_and_key():
    with pytest.raises(
        SpecError, match=r"<sweep>:2: \[defaults\] key 'cooldown_s': expected a finite number of seconds"
    ):
        parse_spec(
            '[defaults]\ncooldown_s = nan\n[[variant]]\nlabel = "a"\nprecision = "x"\nurl = "http://127.0.0.1:1"\n'
        )


def test_adaptive_repeat_keys_reach_the_variant_settings():
    text = (
        "[defaults]\ntarget_ci_pct = 3\nmax_repeats = 8\n"
        '[[variant]]\nlabel = "a"\nprecision = "x"\nurl = "http://127.0.0.1:1"\n'
        '[[variant]]\nlabel = "b"\nprecision = "y"\nurl = "http://127.0.0.1:1"\nmax_repeats = 4\n'
    )
    spec = parse_spec(text)
    assert [(v.settings.target_ci_pct, v.settings.max_repeats) for v in spec.variants] == [(3, 8), (3, 4)]


def test_interleaved_order_refuses_a_ci_target():
    """Interleaving aligns variants by repeat; adaptive repeats decide their count as runs land."""
    text = (
        '[defaults]\nurl = "http://127.0.0.1:8080"\norder = "interleaved"\ntarget_ci_pct = 3\n'
        '[[variant]]\nlabel = "a"\nprecision = "x"\nmodel = "m1"\n'
    )
    with pytest.raises(SpecError, match="runs a fixed number of repeats"):
        parse_spec(text)
    assert parse_spec(text.replace("target_ci_pct = 3\n", "")).order == "interleaved"


def test_a_variant_key_in_defaults_says_where_it_belongs():
    """`kv_cache_dtype` in [defaults] was an "unknown key" with no hint: it is a variant's own key."""
    text = '[defaults]\nurl = "http://127.0.0.1:8080"\nkv_cache_dtype = "q8_0"\n\n[[variant]]\nlabel = "A"\nprecision = "fp16"\nmodel = "m"\n'
    with pytest.raises(
        SpecError,
        match=r":3: \[defaults\] key 'kv_cache_dtype': belongs in a \[\[variant\]\] \(each variant has its own\)",
    ):
        parse_spec(text)
