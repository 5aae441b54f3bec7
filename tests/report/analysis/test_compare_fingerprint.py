"""`precmon compare` lists where the files' environments (host.fingerprint, server build and
flags) differ, in every format, with the files' text escaped for each medium."""

from __future__ import annotations

import copy
import io
import json

from rich.console import Console

from precmon.core.schema import ServerInfo
from precmon.report.analysis.fingerprint_diff import ABSENT, fingerprint_diff
from precmon.report.export import render_compare
from precmon.report.render.terminal import render_terminal
from precmon.report.sections import build_compare

FP = {
    "id": "aaaaaaaaaaaa",
    "id_from": ["cpu_model", "hostname"],
    "hostname": "vm",
    "cpu_model": "Intel Xeon",
    "cpu_governor": "performance",
    "gpus": [{"index": 0, "name": "NVIDIA H200", "power_limit_w": 700.0}],
    "driver_version": "580.95.05",
    "power_sources": [{"id": "nvml:0", "kind": "nvml", "scope": "gpu", "method": "counter", "rate_hz": 10.0}],
    "idle_baseline": {"power_w": 75.0, "channel": "nvml:0", "variant": "F16"},
    "reasons": {},
}


def with_fp(doc, **changes):
    d = copy.deepcopy(doc)
    d.host.fingerprint = copy.deepcopy(FP) | changes
    for v in d.variants:
        v.server = ServerInfo(kind="llamacpp", version="b1", flags={"n_ctx": 4096})
    return d


def test_only_the_differing_keys_are_listed(cpu_doc):
    a = with_fp(cpu_doc)
    b = with_fp(cpu_doc, id="bbbbbbbbbbbb", cpu_governor="powersave", id_from=["x"], reasons={"gpu": "none"})
    b.host.fingerprint["gpus"][0]["power_limit_w"] = 450.0
    b.variants[0].server.flags = {"n_ctx": 8192}
    rows = {d.key: d.values for d in fingerprint_diff([a, b])}
    assert rows == {
        "fingerprint.id": ("aaaaaaaaaaaa", "bbbbbbbbbbbb"),
        "fingerprint.cpu_governor": ("performance", "powersave"),
        "fingerprint.gpus[0].power_limit_w": ("700", "450"),
        "server.llamacpp.flags.n_ctx": ("4096", "4096 | 8192"),  # a set: sorted, whatever the variant order
    }
    assert fingerprint_diff([a, a]) == [] and fingerprint_diff([a]) == []


def test_a_file_without_fingerprint_shows_absent(cpu_doc):
    rows = {d.key: d.values for d in fingerprint_diff([with_fp(cpu_doc), cpu_doc])}
    assert rows["fingerprint.driver_version"] == ("580.95.05", ABSENT)
    assert fingerprint_diff([cpu_doc, cpu_doc]) == []  # older files: no section at all


def test_every_format_renders_the_section_escaped(cpu_doc):
    hostile = "\x1b[31m<b>|gov`[red]"
    docs = [with_fp(cpu_doc), with_fp(cpu_doc, cpu_governor=hostile)]
    names = ["a.json", "b.json"]
    md = render_compare(docs, "md", names)
    assert "## Environment differences" in md and "| fingerprint.cpu_governor | performance |" in md
    assert "\x1b" not in md and "<b>" not in md and "&lt;b&gt;\\|gov\\`" in md
    html = render_compare(docs, "html", names)
    assert '<table id="fingerprint">' in html and "&lt;b&gt;" in html and "<b>|" not in html
    assert "\x1b" not in html
    csv_text = render_compare(docs, "csv", names)
    assert "b.json,,fingerprint:fingerprint.cpu_governor,," in csv_text and "\x1b" not in csv_text
    doc = json.loads(render_compare(docs, "json", names))
    assert {"key": "fingerprint.cpu_governor", "values": ["performance", hostile]} in doc["fingerprint_diff"]
    out = io.StringIO()
    Console(file=out, width=200, color_system=None).print(render_terminal(build_compare(docs, names)))
    text = out.getvalue()
    assert "Environment differences" in text and "fingerprint.cpu_governor" in text
    assert "\x1b" not in text and "[red]" in text  # shown, not interpreted as markup


def test_identical_environments_add_nothing(cpu_doc):
    docs = [with_fp(cpu_doc), with_fp(cpu_doc)]
    assert "Environment differences" not in render_compare(docs, "md", ["a", "b"])
    assert "fingerprint_diff" not in json.loads(render_compare(docs, "json", ["a", "b"]))


def test_hostile_shapes_do_not_break_the_walk(cpu_doc):
    a, b = with_fp(cpu_doc), copy.deepcopy(cpu_doc)
    b.host.fingerprint = {"gpus": [1, {"x": [[[[[1]]]]]}], "power_sources": {"a": {"b": {"c": {"d": {"e": 1}}}}}}
    # a server's own flags are any JSON object too (a server that is not an object never loads)
    b.variants[0].server = ServerInfo(kind="\x1b[31m" * 30, flags={"a": [[[[[1]]]]], "b": [1, {"c": None}]})
    rows = fingerprint_diff([a, b])
    assert rows and all(len(d.values) == 2 for d in rows)
