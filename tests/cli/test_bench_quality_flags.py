"""`bench --quality-ref` / `--quality-text` are checked before anything is measured: exit 2, one
line naming the file (a missing reference found after minutes of measuring would waste them)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest


@pytest.mark.parametrize(
    ("flag", "content", "expect"),
    [
        ("--quality-ref", None, "--quality-ref: {path}: no such file"),
        ("--quality-ref", '{"schema": "precmon.results/1", "variants": []}', "no quality reference here"),
        ("--quality-text", None, "--quality-text {path}: no such file"),
        ("--quality-text", "   \n", "--quality-text {path}: empty: nothing to score on"),
    ],
)
def test_a_bad_quality_file_is_a_usage_error_before_measuring(tmp_path, flag, content, expect):
    path = tmp_path / "f"
    if content is not None:
        path.write_text(content)
    proc = subprocess.run(  # port 1: nothing listens; the flag must fail first
        [sys.executable, "-m", "precmon.cli", "bench", "--url", "http://127.0.0.1:1", flag, str(path)],
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )
    assert proc.returncode == 2, proc.stderr
    (line,) = proc.stderr.strip().splitlines()
    assert expect.format(path=path) in line


def test_positions_and_top_k_are_bounded():
    proc = subprocess.run(
        [sys.executable, "-m", "precmon.cli", "bench", "--url", "http://127.0.0.1:1", "--quality-top-k", "101"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert (
        proc.returncode == 2 and "argument --quality-top-k: expected an integer from 1 to 100, got 101" in proc.stderr
    )


def test_a_reference_of_another_text_is_a_usage_error_before_measuring(tmp_path):
    """A reference made with `--quality-text eval.txt`, used without it: the mismatch was found
    only after the whole plan (quality 'unavailable', exit 1); it is known from the file alone."""
    from precmon.measure.quality.reference import Reference, text_sha256

    ref = Reference("F16", None, "llamacpp", "eval.txt", text_sha256("another text"), (1, 2), 2, ()).to_dict()
    path = tmp_path / "ref.json"
    path.write_text(json.dumps(ref | {"positions": [{"top": [[5, -0.5]], "own": -1.0}]}))
    proc = subprocess.run(  # port 1: nothing listens; the flag must fail first
        [sys.executable, "-m", "precmon.cli", "bench", "--url", "http://127.0.0.1:1", "--quality-ref", str(path)],
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )
    assert proc.returncode == 2, proc.stderr
    (line,) = proc.stderr.strip().splitlines()
    assert line.endswith(
        f"--quality-ref: {path}: made from the text 'eval.txt', not this one (built-in); "
        "pass that text with --quality-text"
    )


def _bench_ref(path):
    return subprocess.run(  # port 1: nothing listens; the flag must fail first, or pass
        [sys.executable, "-m", "precmon.cli", "bench", "--url", "http://127.0.0.1:1", "--quality-ref", str(path)],
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )


def test_a_llama_perplexity_base_file_is_a_reference_and_a_broken_one_a_usage_error(tmp_path):
    from tests.measure.test_quality_llama_base import ROW, TOKENS, write_base

    good = write_base(tmp_path / "f16.kld", [[ROW] * 3], TOKENS[:8])
    proc = _bench_ref(good)
    assert "--quality-ref" not in proc.stderr, proc.stderr  # read; the text's ids are compared when scored
    broken = tmp_path / "cut.kld"
    broken.write_bytes(good.read_bytes()[:-10])
    proc = _bench_ref(broken)
    assert proc.returncode == 2, proc.stderr
    (line,) = proc.stderr.strip().splitlines()
    assert f"--quality-ref: {broken}: " in line and line.endswith("truncated or not a base file")
