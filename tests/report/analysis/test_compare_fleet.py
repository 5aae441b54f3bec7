"""`precmon compare` across a fleet: columns named by host and GPU, two hosts called "vm" told
apart by their fingerprint's machine id, and `--group precision` (docs/design.md §3, §5)."""

from __future__ import annotations

import copy
import io
import json

from report_helpers import DATA, check_golden, load, load_doc, typed

from precmon.cli.commands.report_cmd import compare_files
from precmon.report.analysis.compare import merge_documents
from precmon.report.analysis.fleet import gpu_part, host_names
from precmon.report.export import render_compare
from precmon.report.load import load_document

FILES = ["vm_h200.json", "vm_l40s.json", "cpu_tiny.json"]


def labels(docs, group="file"):
    return [v.label for v in merge_documents(docs, group=group).variants]


def test_two_hosts_called_vm_get_their_machine_id_in_the_label():
    a, b = load_doc("vm_h200.json"), load_doc("vm_l40s.json")
    assert labels([a, b]) == [
        "vm#3fa2 · H200 · F16 · 2026-12-01",
        "vm#3fa2 · H200 · Q8_0 · 2026-12-01",
        "vm#91c0 · 2×L40S · F16 · 2026-12-01",
        "vm#91c0 · 2×L40S · Q8_0 · 2026-12-01",
    ]
    # one machine twice (another day): its hostname is enough
    assert host_names([a, copy.deepcopy(a)]) == ["vm", "vm"]


def test_machine_ids_that_share_a_prefix_get_a_longer_one():
    a, b = load_doc("vm_h200.json"), load_doc("vm_l40s.json")
    b.host.fingerprint["machine_id"] = "3fa2ff0000000000"
    assert host_names([a, b]) == ["vm#3fa2c4", "vm#3fa2ff"]


def test_old_files_without_a_machine_id_load_and_keep_the_hostname(tmp_path):
    old = load("vm_h200.json")
    del old["host"]["fingerprint"]["machine_id"], old["host"]["fingerprint"]["machine_id_from"]
    path = tmp_path / "old.json"
    path.write_text(json.dumps(old))
    docs = [load_document(path), load_document(DATA / "vm_l40s.json")]
    assert host_names(docs) == ["vm", "vm"]  # nothing to tell them apart by: the GPU still does
    assert labels(docs)[0] == "vm · H200 · F16 · 2026-12-01"
    bad = load_doc("vm_l40s.json")
    bad.host.fingerprint["machine_id"] = "\x1b[31mnot hex"  # untrusted: not used
    assert host_names([load_doc("vm_h200.json"), bad]) == ["vm", "vm"]


def test_gpu_part_names_the_gpus_without_the_vendor():
    assert gpu_part(typed({"host": {"gpus": [{"name": "NVIDIA GB10"}]}})) == "GB10"
    assert gpu_part(typed({"host": {"gpus": [{"name": "NVIDIA H200"}, {"name": "NVIDIA L40S"}]}})) == "H200+L40S"
    assert gpu_part(typed({"host": {"gpus": [], "fingerprint": {"gpus": [{"name": "NVIDIA H200"}]}}})) == "H200"
    assert gpu_part(typed({"host": {"gpus": []}})) == "CPU" and gpu_part(typed({})) == "CPU"


def test_group_precision_puts_each_precision_of_every_host_side_by_side():
    docs = [load_doc(f) for f in FILES]
    got = labels(docs, group="precision")
    assert got == [
        "vm#3fa2 · H200 · F16 · 2026-12-01",
        "vm#91c0 · 2×L40S · F16 · 2026-12-01",
        "ci-runner · CPU · F16 · 2026-11-29",
        "vm#3fa2 · H200 · Q8_0 · 2026-12-01",
        "vm#91c0 · 2×L40S · Q8_0 · 2026-12-01",
        "ci-runner · CPU · Q8_0 · 2026-11-29",
        "ci-runner · CPU · Q4_K_M · 2026-11-29",
    ]
    assert sorted(got) == sorted(labels(docs))  # the same columns, another order


def test_grouped_compare_golden():
    md = render_compare([load_doc(f) for f in FILES], "md", FILES, group="precision")
    check_golden("compare_fleet_grouped.md", md)


def test_cli_group_flag_and_a_bad_group():
    out, err = io.StringIO(), io.StringIO()
    paths = [DATA / f for f in FILES]
    assert compare_files(paths, fmt="json", stdout=out, stderr=err, group="precision") == 0
    doc = json.loads(out.getvalue())
    assert doc["group"] == "precision"
    assert [s["host_label"] for s in doc["sources"]] == ["vm#3fa2", "vm#91c0", "ci-runner"]
    assert compare_files(paths, stdout=io.StringIO(), stderr=err, group="host") == 2
    assert err.getvalue() == "precmon compare: --group 'host' is not one of file, precision\n"
