"""Sweep keys for quality scoring: `quality`, `quality_positions`, `quality_top_k`, `quality_text`
([defaults] or per variant) and `baseline` ([defaults] only), each error naming file, line, key."""

from __future__ import annotations

from pathlib import Path

import pytest

from precmon.measure.quality.text import TEXT
from precmon.sweep.spec import SpecError, parse_spec

HEAD = '[defaults]\nurl = "http://127.0.0.1:8080"\n'
VARIANTS = '[[variant]]\nlabel = "F16"\nprecision = "fp16"\nmodel = "a"\n\n[[variant]]\nlabel = "Q4"\nprecision = "int4"\nmodel = "b"\n'


def test_quality_is_off_by_default_and_the_baseline_is_the_first_variant():
    spec = parse_spec(HEAD + VARIANTS)
    assert [v.quality for v in spec.variants] == [None, None]
    assert spec.baseline_label == "F16" and not spec.scores_quality


def test_defaults_turn_it_on_and_a_variant_overrides():
    text = HEAD + 'quality = true\nquality_positions = 64\nbaseline = "Q4"\n' + VARIANTS + "quality_top_k = 5\n"
    spec = parse_spec(text)
    f16, q4 = spec.variants
    assert f16.quality is not None and (f16.quality.positions, f16.quality.top_k) == (64, 20)
    assert q4.quality is not None and (q4.quality.positions, q4.quality.top_k) == (64, 5)
    assert f16.quality.text == TEXT and f16.quality.text_name == "built-in"
    assert spec.baseline_label == "Q4" and spec.scores_quality


def test_one_variant_only():
    spec = parse_spec(HEAD + VARIANTS + "quality = true\n")
    assert spec.variants[0].quality is None and spec.variants[1].quality is not None


def test_quality_text_is_read_relative_to_the_sweep_file(tmp_path: Path):
    (tmp_path / "eval.txt").write_text("my own text", encoding="utf-8")
    path = tmp_path / "s.toml"
    spec = parse_spec(HEAD + 'quality = true\nquality_text = "eval.txt"\n' + VARIANTS, path)
    assert spec.variants[0].quality is not None
    assert (spec.variants[0].quality.text, spec.variants[0].quality.text_name) == ("my own text", "eval.txt")


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ("quality = 1\n", "s.toml:3: [defaults] key 'quality': expected true or false, got int 1"),
        (
            "quality_positions = 0\n",
            "s.toml:3: [defaults] key 'quality_positions': expected an integer from 1 to 100000, got 0",
        ),
        (
            "quality_top_k = 101\n",
            "s.toml:3: [defaults] key 'quality_top_k': expected an integer from 1 to 100, got 101",
        ),
        ('baseline = "Q8"\n', "s.toml:3: [defaults] key 'baseline': 'Q8' is not a variant's label (have: F16, Q4)"),
        ('quality = true\nquality_text = "absent.txt"\n', "s.toml:4: [defaults] key 'quality_text': "),
        ('quality = true\norder = "interleaved"\n', "s.toml:3: [defaults] key 'quality': quality scoring runs after"),
    ],
)
def test_bad_quality_keys_name_the_line_and_key(tmp_path: Path, extra: str, message: str):
    with pytest.raises(SpecError) as exc:
        parse_spec(HEAD + extra + VARIANTS, tmp_path / "s.toml")
    assert str(exc.value).replace(str(tmp_path) + "/", "").startswith(message)


def test_baseline_belongs_in_defaults():
    with pytest.raises(SpecError, match="variant #2 key 'baseline': belongs in \\[defaults\\]"):
        parse_spec(HEAD + VARIANTS + 'baseline = "F16"\n')


def test_check_lists_the_quality_plan(tmp_path: Path):
    import subprocess
    import sys

    path = tmp_path / "s.toml"
    path.write_text(HEAD + 'quality = true\nbaseline = "Q4"\n' + VARIANTS)
    proc = subprocess.run(
        [sys.executable, "-m", "precmon.cli", "sweep", str(path), "--check"], capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines()[1] == (
        "quality: F16, Q4; baseline Q4 (measured first), P=510, K=20, text built-in; the pick within mean KL ≤ 0.05 nats"
    )


@pytest.mark.skipif(not Path("/dev/zero").exists(), reason="needs /dev/zero")
def test_a_quality_text_without_end_is_one_line_not_a_memory_blowup(tmp_path: Path):
    """`quality_text = "/dev/zero"` (a device: size 0, no end) was read whole until memory ran
    out; the read is bounded, so it is the one 'larger than' line. Run under a 1 GiB address
    space so the unbounded read fails fast instead of eating the machine."""
    import resource
    import subprocess
    import sys

    path = tmp_path / "s.toml"
    path.write_text(HEAD + 'quality = true\nquality_text = "/dev/zero"\n' + VARIANTS)

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (2**30, 2**30))

    proc = subprocess.run(
        [sys.executable, "-m", "precmon", "sweep", str(path), "--check"],
        capture_output=True,
        text=True,
        timeout=60,
        preexec_fn=limit,
    )
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.strip().endswith("key 'quality_text': /dev/zero: larger than 4 MiB: not an evaluation text")
    assert "Traceback" not in proc.stderr


@pytest.mark.parametrize(
    ("keys", "message"),
    [
        (("", 'quality_text = "other.txt"\n'), "s.toml:13: variant #2 key 'quality_text': 'Q4' would be scored on"),
        (
            ('quality_text = "other.txt"\n', ""),
            "s.toml:8: variant #1 key 'quality_text': 'Q4' would be scored on built-in",
        ),
    ],
)
def test_a_variant_scored_on_another_text_than_the_baseline_is_refused(tmp_path: Path, keys, message):
    """The reference is for the baseline's text: a variant of another `quality_text` found it
    unusable only after both were measured; the file says so, so --check does."""
    (tmp_path / "other.txt").write_text("another evaluation text, not the baseline's")
    first, second = VARIANTS.split("\n\n")
    text = HEAD + "quality = true\n" + first + "\n" + keys[0] + "\n" + second + keys[1]
    with pytest.raises(SpecError) as exc:
        parse_spec(text, tmp_path / "s.toml")
    assert str(exc.value).replace(str(tmp_path) + "/", "").startswith(message)


def test_every_variant_on_the_same_other_text_is_fine(tmp_path: Path):
    (tmp_path / "other.txt").write_text("another evaluation text")
    spec = parse_spec(HEAD + 'quality = true\nquality_text = "other.txt"\n' + VARIANTS, tmp_path / "s.toml")
    assert all(v.quality is not None and v.quality.text_name == "other.txt" for v in spec.variants)
