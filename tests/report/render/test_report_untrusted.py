"""Labels, errors, model and host names from a results file are untrusted (issue 11 #6).

Before: `[/]` in an error crashed `precmon report` (rich MarkupError through the table caption),
a host name was parsed as rich markup in the title, `<script>` passed raw into the Markdown
export, and ANSI escapes from labels reached the terminal.
"""

from __future__ import annotations

import copy
import io
import json
import re

import pytest
from report_helpers import load

from precmon.cli.commands.report_cmd import compare_files, report_file
from precmon.report.fmt import md_text

HOSTILE = "<script>alert(1)</script> | `x` [/] [bold]B\x1b[31mred\x1b]0;title\x07\x07"


def hostile_doc() -> dict:
    doc = copy.deepcopy(load("cpu_tiny.json"))
    doc["host"]["hostname"] = "[/]" + HOSTILE
    doc["host"]["gpus"] = [{"name": HOSTILE}]
    v = doc["variants"][0]
    v["label"] = "F16 " + HOSTILE
    v["model"] = HOSTILE
    v["status"] = "partial"
    v["errors"] = ["HTTP 500: [/] " + HOSTILE]
    v["server"]["kind"] = HOSTILE
    return doc


def call(fn, *args, **kw):
    out, err = io.StringIO(), io.StringIO()
    rc = fn(*args, stdout=out, stderr=err, **kw)
    return rc, out.getvalue(), err.getvalue()


@pytest.fixture
def hostile(tmp_path):
    path = tmp_path / "r.json"
    path.write_text(json.dumps(hostile_doc()), encoding="utf-8")
    return path


def test_terminal_report_does_not_crash_or_pass_escapes(hostile):
    rc, out, err = call(report_file, hostile)
    assert rc == 0 and err == ""
    assert "\x1b" not in out and "\x07" not in out
    assert "[/]" in out and "[bold]B" in out  # shown as typed, not taken as markup
    assert "HTTP 500: [/]" in out


def test_compare_terminal_does_not_crash(hostile):
    rc, out, err = call(compare_files, [hostile, hostile])
    assert rc == 0 and err == "" and "\x1b" not in out and "[/]" in out


def test_markdown_escapes_html_pipes_and_backticks(hostile):
    rc, out, _ = call(report_file, hostile, "md")
    assert rc == 0
    assert "<script>" not in out and "&lt;script&gt;" in out
    assert "`x`" not in out and "\\`x\\`" in out
    assert "\x1b" not in out and "\x07" not in out
    table = [line for line in out.splitlines() if line.startswith("| Metric |")][0]
    assert len(re.findall(r"(?<!\\)\|", table)) == 5  # 4 columns: the label's pipe is escaped
    rc, out, _ = call(compare_files, [hostile], "md")
    assert rc == 0 and "<script>" not in out and "\x1b" not in out


def test_html_escapes_everything(hostile):
    rc, out, _ = call(report_file, hostile, "html")
    assert rc == 0 and "<script>" not in out and "\x1b" not in out and "&lt;script&gt;" in out
    rc, out, _ = call(compare_files, [hostile], "html")
    assert rc == 0 and "<script>" not in out and "\x1b" not in out


def test_what_ran_escapes_a_hostile_compute_path(tmp_path):
    """The compute path is stored as the server's log had it (a vLLM kernel name, a llama.cpp GPU
    name): every renderer of "What ran" escapes it, and the fallback warning with it."""
    doc = copy.deepcopy(load("cpu_tiny.json"))
    v = doc["variants"][0]
    v["compute_path"] = {
        "backend": "CUDA", "engine": "vLLM", "words": "CUDA (" + HOSTILE + ")", "kernel": "NVFP4 weight-only: " + HOSTILE,
        "kernels": [{"kernel": HOSTILE, "for": HOSTILE, "class": "weight-only"}],
    }  # fmt: skip
    v["warnings"] = ["fallback-kernel: NVFP4 weights ran weight-only: " + HOSTILE]
    path = tmp_path / "r.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    rc, out, err = call(report_file, path)
    assert rc == 0 and err == "" and "What ran" in out and "weight-only:" in out  # folded in its cell
    assert "\x1b" not in out and "\x07" not in out and "[bold]B" in out
    for fmt in ("md", "html"):
        rc, out, _ = call(report_file, path, fmt)
        assert rc == 0 and "What ran" in out and "NVFP4 weight-only" in out, fmt
        assert "<script>" not in out and "&lt;script&gt;" in out and "\x1b" not in out and "\x07" not in out, fmt


def test_md_text():
    assert md_text("a|b") == "a\\|b"
    assert md_text("<b>&amp;") == "&lt;b&gt;&amp;amp;"
    assert md_text("x\ny") == "x y"
    assert md_text("\x1b[31mred") == "red"
    assert md_text("back\\slash `code`") == "back\\\\slash \\`code\\`"


def test_report_of_an_old_file_shows_no_credentials(tmp_path):
    """A results file written before redaction (a URL password, a launch --api-key) is shown redacted."""
    from precmon.report.export import render
    from precmon.report.load import load_document

    doc = copy.deepcopy(load("cpu_tiny.json"))
    doc["variants"][0]["server"]["url"] = "http://alice:hunter2@127.0.0.1:8080"
    doc["variants"][0]["errors"] = ["HTTP 401: bad header Authorization: Bearer sk-abcdefghijklmnopqrstu"]
    doc["settings"]["launch"] = ["vllm", "serve", "m", "--api-key", "sk-live-0123456789abcdef"]
    path = tmp_path / "old.json"
    path.write_text(json.dumps(doc))
    loaded = load_document(path)
    for fmt in ("md", "html", "csv", "json"):
        out = render(loaded, fmt)
        assert "hunter2" not in out and "sk-abcdefghij" not in out and "sk-live" not in out, fmt
