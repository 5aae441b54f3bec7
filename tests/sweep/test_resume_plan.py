"""`--resume` checks it is the same job (issue 39 #2, #3): a changed `output_tokens`, prompt size,
model or launch under a kept label was resumed silently, the old variants keeping runs of the old
plan while `settings` claimed the new one; and a variant that had no quality reference because
the baseline had failed stayed "ok" with quality n/a after the baseline was measured on resume."""

from __future__ import annotations

import json

import pytest

from precmon.core.schema import ResultsDoc, VariantResult, from_json, to_json
from precmon.sweep.resume import PlanChanged, resume, variant_plan
from precmon.sweep.runner import SweepRunner
from precmon.sweep.spec import parse_spec
from precmon.sweep.store import ResultStore
from tests.fakes.timed_server import Behaviour, TimedServer
from tests.hostile.run import precmon

HEAD = """[defaults]
output_tokens = {out}
decode_prompt_tokens = 8
prefill_tokens = [16]
ttft_tokens = 16
repeats = 1
warmup = 0
idle_s = 0
cooldown_s = 0
timeout_s = {timeout}
server = "llamacpp"
"""


def text(url: str, out: int = 4, timeout: int = 10, b_model: str = "m", extra: str = "") -> str:
    return (
        HEAD.format(out=out, timeout=timeout)
        + f'[[variant]]\nlabel = "A"\nprecision = "f16"\nurl = "{url}"\n'
        + f'[[variant]]\nlabel = "B"\nprecision = "int4"\nurl = "{url}"\nmodel = "{b_model}"\n'
        + extra
    )


@pytest.fixture
def server():
    with TimedServer(Behaviour(itl_s=0.001, prefill_s_per_token=0.00001)) as srv:
        yield srv


def swept(tmp_path, body: str, **kw) -> SweepRunner:
    r = SweepRunner(parse_spec(body), tmp_path, **kw)
    r.run()
    return r


def test_every_variant_keeps_the_plan_that_measured_it(tmp_path, server):
    swept(tmp_path, text(server.url))
    doc = json.loads((tmp_path / "results.json").read_text())
    a, b = doc["variants"]
    assert a["plan"]["settings"]["output_tokens"] == 4 and "timeout_s" not in a["plan"]["settings"]
    assert b["plan"]["model"] == "m" and b["plan"]["precision"] == "int4" and b["plan"]["url"] == server.url


def test_a_changed_setting_is_refused_naming_the_key(tmp_path, server):
    swept(tmp_path, text(server.url))
    before = (tmp_path / "results.json").read_bytes()
    with pytest.raises(PlanChanged) as exc:
        swept(tmp_path, text(server.url, out=6), resume=True)
    line = str(exc.value)
    assert "output_tokens 4 → 6 (A, B)" in line and "--replan" in line and "\n" not in line
    assert (tmp_path / "results.json").read_bytes() == before


def test_a_changed_model_under_a_kept_label_is_refused(tmp_path, server):
    swept(tmp_path, text(server.url))
    with pytest.raises(PlanChanged, match=r'model "m" → "other" \(B\)'):
        swept(tmp_path, text(server.url, b_model="other"), resume=True)


def test_a_deadline_and_a_new_variant_are_no_change_of_plan(tmp_path, server):
    swept(tmp_path, text(server.url))
    logs: list[str] = []
    extra = f'[[variant]]\nlabel = "C"\nprecision = "int8"\nurl = "{server.url}"\n'
    r = SweepRunner(parse_spec(text(server.url, timeout=30, extra=extra)), tmp_path, resume=True,
                    on_event=lambda ev: logs.append(str(getattr(ev, "text", ""))))  # fmt: skip
    r.run()
    assert any("A, B already measured, skipped" in line for line in logs)
    assert [v["label"] for v in json.loads((tmp_path / "results.json").read_text())["variants"]] == ["A", "B", "C"]


def test_replan_measures_again_what_the_change_touches(tmp_path, server):
    swept(tmp_path, text(server.url))
    swept(tmp_path, text(server.url, b_model="other"), resume=True, replan=True)
    a, b = json.loads((tmp_path / "results.json").read_text())["variants"]
    assert b["plan"]["model"] == "other" and b["model"] == "other"
    journaled = [json.loads(line) for line in (tmp_path / "journal.jsonl").read_text().splitlines()]
    measured = [r["variant"]["label"] for r in journaled if r["type"] == "variant"]
    assert measured == ["A", "B", "B"]  # A kept, B measured again


def test_replan_cannot_measure_a_variant_taken_out_of_the_file(tmp_path, server):
    swept(tmp_path, text(server.url))
    only_a = HEAD.format(out=6, timeout=10) + f'[[variant]]\nlabel = "A"\nprecision = "f16"\nurl = "{server.url}"\n'
    with pytest.raises(PlanChanged, match="B measured with another plan .* no longer in the sweep file"):
        swept(tmp_path, only_a, resume=True, replan=True)


def test_an_older_file_is_checked_on_what_it_holds(tmp_path, server):
    swept(tmp_path, text(server.url))
    doc = json.loads((tmp_path / "results.json").read_text())
    for v in doc["variants"]:
        del v["plan"]  # written before variants kept their plan
    (tmp_path / "results.json").write_text(json.dumps(doc))
    (tmp_path / "journal.jsonl").unlink()
    with pytest.raises(PlanChanged, match=r"output_tokens 4 → 6 \(A, B\)"):
        swept(tmp_path, text(server.url, out=6), resume=True)
    swept(tmp_path, text(server.url, timeout=30), resume=True)  # the same plan: resumed


def test_the_cli_refuses_with_one_line_and_exit_2(tmp_path, server):
    spec, out = tmp_path / "s.toml", tmp_path / "out"
    spec.write_text(text(server.url))
    assert precmon("sweep", str(spec), "--headless", "--out", str(out), timeout_s=60).rc == 0
    spec.write_text(text(server.url, out=6))
    ran = precmon("sweep", str(spec), "--headless", "--out", str(out), "--resume", "--json", str(tmp_path / "j.json"))
    assert ran.rc == 2 and "output_tokens 4 → 6 (A, B)" in ran.err and ran.err.count("\n") == 1, ran.err
    assert not (tmp_path / "j.json").exists()
    ran = precmon("sweep", str(spec), "--headless", "--out", str(out), "--replan")
    assert ran.rc == 2 and "--replan goes with --resume" in ran.err
    ran = precmon("sweep", str(spec), "--headless", "--out", str(out), "--resume", "--replan", timeout_s=60)
    assert ran.rc == 0, ran.err
    assert {
        v["plan"]["settings"]["output_tokens"] for v in json.loads((out / "results.json").read_text())["variants"]
    } == {6}


# ---- quality that waited for its baseline (#3) ------------------------------------------------

QSPEC = (
    HEAD.format(out=4, timeout=10)
    + """quality = true
[[variant]]
label = "F16"
precision = "fp16"
url = "http://127.0.0.1:9"
[[variant]]
label = "Q4"
precision = "int4"
url = "http://127.0.0.1:9"
"""
)


def _folder(tmp_path, spec, q4_quality: dict) -> ResultStore:
    base = VariantResult(label="F16", precision="fp16", status="failed", errors=["connection refused"])
    q4 = VariantResult(label="Q4", precision="int4", status="ok", quality=q4_quality)
    q4.plan = variant_plan(spec.variants[1], spec)
    doc = ResultsDoc(settings=spec.settings_dict(), variants=[base, q4])
    (tmp_path / "results.json").write_text(json.dumps(to_json(doc)))
    assert from_json(ResultsDoc, json.loads((tmp_path / "results.json").read_text())).variants[1].quality
    return ResultStore(tmp_path, spec.settings_dict(), doc.host)


@pytest.mark.parametrize(
    "quality",
    [
        {
            "baseline": "F16",
            "positions": 0,
            "reason": "no reference from the baseline 'F16' (x)",
            "reference": "missing",
        },
        {
            "baseline": "F16",
            "positions": 0,
            "reason": "no reference from the baseline 'F16' (no such file)",
        },  # older file
    ],
)
def test_a_variant_without_its_reference_is_measured_again_with_the_baseline(tmp_path, quality):
    spec = parse_spec(QSPEC)
    logs: list[str] = []
    done = resume(spec, _folder(tmp_path, spec, quality), replan=False, log=logs.append)
    assert done == set()  # F16 failed, Q4 waited for it: both measured, the baseline first
    assert any("Q4 had no quality reference: measured again, with quality" in line for line in logs)


def test_a_variant_scored_or_unscorable_for_another_reason_stays_done(tmp_path):
    spec = parse_spec(QSPEC)
    other = {"baseline": "F16", "positions": 0, "reason": "the server does not give log-probabilities"}
    assert resume(spec, _folder(tmp_path, spec, other), replan=False, log=lambda t: None) == {"Q4"}


def test_quality_step_marks_a_missing_reference(tmp_path):
    from tests.fakes.quality_stub import StubLlama
    from tests.sweep.test_runner_quality import score

    r = SweepRunner(parse_spec(QSPEC), tmp_path)
    q4 = VariantResult(label="Q4", precision="int4", status="ok")
    score(r, r.spec.variants[1], StubLlama([1, 2, 3, 4]), q4)
    assert q4.quality is not None and q4.quality.reference == "missing"


def test_a_launched_servers_port_is_no_part_of_the_plan():
    """A sweep file made with free ports (the test bed's, a script's) gets other ports each time:
    the same servers, the same plan; another model file in the argv is another plan."""
    from precmon.sweep.resume import launch_key

    a = ["llama-server", "-m", "m.gguf", "--port", "18300", "--host=127.0.0.1", "--api-key", "sk-x"]
    b = ["llama-server", "-m", "m.gguf", "--port", "41234", "--host=127.0.0.1", "--api-key", "sk-x"]
    assert (
        launch_key(a)
        == launch_key(b)
        == ["llama-server", "-m", "m.gguf", "--port", "*", "--host=*", "--api-key", "***"]
    )
    assert launch_key(a) != launch_key(["llama-server", "-m", "other.gguf", "--port", "18300"])
    spec = parse_spec(
        '[[variant]]\nlabel = "A"\nprecision = "x"\nurl = "http://127.0.0.1:18300"\n'
        'launch = ["llama-server", "-m", "m.gguf", "--port", "18300"]\n'
    )
    plan = variant_plan(spec.variants[0], spec)
    assert "url" not in plan and plan["launch"][-1] == "*"
