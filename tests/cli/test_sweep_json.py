"""`precmon sweep --json FILE` (issue 11 #10): honoured whichever way the sweep runs (headless,
no terminal, --resume), and what the sweep stores holds no credential (#15)."""

from __future__ import annotations

import json
import socket
import sys
from pathlib import Path

import pytest

from tests.hostile.run import precmon
from tests.hostile.servers import SCRIPTS, SECRET, HostileServer

SERVERS_PY = Path(__file__).resolve().parents[1] / "hostile" / "servers.py"
TINY_TOML = """
[defaults]
output_tokens = 4
decode_prompt_tokens = 8
prefill_tokens = [16]
ttft_tokens = 16
repeats = 1
warmup = 0
idle_s = 0
cooldown_s = 0
timeout_s = 2
server = "llamacpp"
"""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.parametrize("mode", [[], ["--headless"]])
def test_json_is_written_with_and_without_headless(tmp_path, mode):
    with HostileServer(SCRIPTS["good"]) as srv:
        spec = tmp_path / "s.toml"
        spec.write_text(TINY_TOML + f'[[variant]]\nlabel = "A"\nprecision = "int4"\nurl = "{srv.url}"\n')
        out, copy = tmp_path / "out", tmp_path / "copy.json"
        ran = precmon("sweep", str(spec), *mode, "--out", str(out), "--json", str(copy))  # stdout is no TTY
        assert ran.rc == 0, ran.err
        assert json.loads(copy.read_text()) == json.loads((out / "results.json").read_text())
        copy.unlink()
        ran = precmon("sweep", str(spec), "--resume", "--out", str(out), "--json", str(copy))
    assert ran.rc == 0, ran.err
    assert [v["label"] for v in json.loads(copy.read_text())["variants"]] == ["A"]


def test_launch_argv_key_and_url_password_are_not_stored(tmp_path):
    port = _free_port()
    spec = tmp_path / "s.toml"
    launch = [sys.executable, str(SERVERS_PY), "good", "--port", str(port), "--api-key", "plainsecretvalue"]
    spec.write_text(
        TINY_TOML
        + f'[[variant]]\nlabel = "L"\nprecision = "fp16"\nurl = "http://user:pa55word@127.0.0.1:{port}"\n'
        + f"launch = {json.dumps(launch)}\nready_timeout_s = 20\n"
    )
    out, copy = tmp_path / "out", tmp_path / "copy.json"
    ran = precmon("sweep", str(spec), "--headless", "--out", str(out), "--json", str(copy), timeout_s=60)
    assert ran.rc == 0, ran.err
    for path in (out / "results.json", out / "journal.jsonl", copy):
        text = path.read_text()
        assert "plainsecretvalue" not in text and "pa55word" not in text and SECRET not in text, path
    assert "plainsecretvalue" not in ran.text and "pa55word" not in ran.text
    (v,) = json.loads(copy.read_text())["variants"]
    assert v["status"] == "ok" and "--api-key" in v["launch"]


def test_json_is_written_after_the_tui_sweep(tmp_path, monkeypatch):
    """On a terminal the TUI runs the sweep; --json still gets results.json afterwards (also when
    the TUI ends on an error)."""
    from precmon.cli.commands import sweep_cmd, tui_cmd
    from precmon.cli.parser import build_parser

    spec = tmp_path / "s.toml"
    spec.write_text(TINY_TOML + '[[variant]]\nlabel = "A"\nprecision = "int4"\nurl = "http://127.0.0.1:9"\n')
    out, copy = tmp_path / "out", tmp_path / "copy.json"

    def tui_sweep(spec_obj, out_dir, resume=False):
        out_dir.mkdir(parents=True, exist_ok=True)  # --out is made (and probed) before the sweep starts
        (out_dir / "results.json").write_text(json.dumps({"schema": "precmon.results/1", "variants": []}))
        raise RuntimeError("the TUI fell over after saving")

    monkeypatch.setattr(sweep_cmd.sys.stdout, "isatty", lambda: True)
    monkeypatch.setattr(tui_cmd, "run_sweep_app", tui_sweep)
    args = build_parser().parse_args(["sweep", str(spec), "--out", str(out), "--json", str(copy)])
    with pytest.raises(RuntimeError):
        sweep_cmd.run(args)
    assert json.loads(copy.read_text())["schema"] == "precmon.results/1"


def test_json_onto_the_sweeps_own_journal_is_refused_before_measuring(tmp_path):
    """`--json OUT/journal.jsonl` overwrote the journal (every run as it landed) with results.json."""
    spec = tmp_path / "sweep.toml"
    spec.write_text(TINY_TOML + '\n[[variant]]\nlabel = "A"\nprecision = "fp16"\nurl = "http://127.0.0.1:1"\n')
    out = tmp_path / "out"
    journal = out / "journal.jsonl"
    out.mkdir()
    journal.write_text('{"kept": true}\n')
    proc = precmon("sweep", str(spec), "--headless", "--out", str(out), "--resume", "--json", str(journal))
    assert proc.rc == 2, proc.err
    assert proc.err.strip().endswith(
        f"--json {journal}: is the sweep's journal (every run, as it lands): choose another file"
    )
    assert journal.read_text() == '{"kept": true}\n'
