"""Any locale (issue 39 #6): under an ISO-8859-1 (or ASCII) terminal `report` and `compare` ended
in "internal error (please report it): UnicodeEncodeError", and bench/sweep printed "the table
could not be shown". Output falls back to ASCII stand-ins for the symbols the terminal's encoding
lacks; what a command writes as data (an export to stdout, `--json -`, a file) is the same bytes
in every locale."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

try:
    from precmon.cli.output import stand_in
except ImportError:
    stand_in = None
from tests.fakes.timed_server import Behaviour, TimedServer
from tests.hostile.run import TINY

DATA = Path(__file__).resolve().parents[1] / "report" / "data"


def run(*argv: str, encoding: str) -> subprocess.CompletedProcess[bytes]:
    env = dict(os.environ, PYTHONIOENCODING=encoding, COLUMNS="160")
    env.pop("PYTHONUTF8", None)
    return subprocess.run([sys.executable, "-m", "precmon.cli", *argv], capture_output=True, env=env, timeout=120)


def decoded(p: subprocess.CompletedProcess[bytes], encoding: str) -> str:
    return p.stdout.decode(encoding) + p.stderr.decode(encoding)  # raises if a byte is not of it


@pytest.mark.parametrize("encoding", ["iso-8859-1", "ascii"])
@pytest.mark.parametrize(
    "argv",
    [
        ("report", str(DATA / "spark_8b.json")),
        ("compare", str(DATA / "vm_h200.json"), str(DATA / "vm_l40s.json")),
        ("report", str(DATA / "depth_tiny.json")),
    ],
)
def test_terminal_output_in_a_narrow_encoding(argv, encoding):
    p = run(*argv, encoding=encoding)
    text = decoded(p, encoding)
    assert p.returncode == 0, text[-1500:]
    assert "internal error" not in text and "Traceback" not in text
    assert "Decode" in text


def test_the_stand_ins_read_as_the_symbols():
    assert stand_in("≈ 0.98× ± 2% … → ≤ —", "ascii") == "~ 0.98x +/- 2% ... -> <= -"
    assert stand_in("0.98× ± ≈", "iso-8859-1") == "0.98× ± ~"  # what the encoding has, it keeps


@pytest.mark.parametrize("fmt", ["md", "csv", "json", "html", "llama-bench"])
def test_an_export_to_stdout_is_the_same_bytes_in_every_locale(fmt):
    path = str(DATA / "spark_8b.json")
    utf8 = run("report", path, "--format", fmt, encoding="utf-8")
    latin = run("report", path, "--format", fmt, encoding="iso-8859-1")
    assert utf8.returncode == latin.returncode == 0, latin.stderr[-800:]
    assert latin.stdout == utf8.stdout


def test_bench_shows_its_table_and_json_is_unchanged(tmp_path):
    with TimedServer(Behaviour(itl_s=0.001, prefill_s_per_token=0.00001)) as srv:
        p = run("bench", "--url", srv.url, *TINY, "--label", "Q4 ≈ “x”", "--json", "-", encoding="ascii")
    text = p.stderr.decode("ascii")
    assert p.returncode == 0, text[-1500:]
    assert "could not be shown" not in text and "Decode" in text
    assert json.loads(p.stdout.decode("utf-8"))["variants"][0]["label"] == "Q4 ≈ “x”"
