"""order = "interleaved": variants alternate request by request on one shared endpoint, the
order is recorded, runs land in the journal as measured, stop and --resume still work, and the
sweep file refuses what cannot be interleaved (launch, separate URLs) with file/line/key."""

from __future__ import annotations

import json
import threading

import pytest

from precmon.sweep.events import RunLanded
from precmon.sweep.runner import SweepRunner
from precmon.sweep.spec import SpecError, parse_spec
from precmon.sweep.store import runs_from_journal
from tests.fakes.timed_server import Behaviour, TimedServer

HEAD = """\
[defaults]
url = "{url}"
server = "openai"
output_tokens = 4
decode_prompt_tokens = 8
prefill_tokens = [32]
ttft_tokens = 48
repeats = 2
warmup = 1
idle_s = 0
cooldown_s = 0
{order}
"""
VARIANTS = "".join(f'\n[[variant]]\nlabel = "{m}"\nprecision = "{m.lower()}"\nmodel = "{m}"\n' for m in "ABC")


def spec_text(url: str, order: str = 'order = "interleaved"') -> str:
    return HEAD.format(url=url, order=order) + VARIANTS


def completions(srv: TimedServer) -> list[tuple[str, int]]:
    """(model, max_tokens) of every generation request the server saw, in order."""
    return [(r["model"], r["max_tokens"]) for r in srv.behaviour.requests if "model" in r]


def test_variants_alternate_step_by_step_and_the_order_is_recorded(tmp_path):
    with TimedServer(Behaviour(itl_s=0.001)) as srv:
        events: list = []
        path = SweepRunner(parse_spec(spec_text(srv.url)), tmp_path, on_event=events.append).run()
        seen = completions(srv)
    doc = json.loads(path.read_text())
    assert [v["status"] for v in doc["variants"]] == ["ok", "ok", "ok"]
    assert doc["settings"]["order"] == "interleaved"
    # warm-up, decode #1, decode #2, prefill #1, #2, ttft #1, #2: each of A, B, C in turn
    assert [m for m, _ in seen] == list("ABC") * 7
    by = {v["label"]: v for v in doc["variants"]}
    indexes = [r["extra"]["order_index"] for v in doc["variants"] for r in v["runs"]]
    assert sorted(indexes) == list(range(21))
    assert [r["extra"]["order_index"] for r in by["B"]["runs"]] == list(range(1, 21, 3))
    landed = [(e.label, e.run.extra.order_index) for e in events if isinstance(e, RunLanded)]
    assert [i for _, i in landed] == list(range(21))  # each run reported (and journaled) as it lands
    journal = runs_from_journal(tmp_path / "journal.jsonl")
    assert [len(journal[x]) for x in "ABC"] == [7, 7, 7]


def test_sequential_records_no_order(tmp_path):
    with TimedServer(Behaviour(itl_s=0.001)) as srv:
        path = SweepRunner(parse_spec(spec_text(srv.url, order="")), tmp_path).run()
        seen = completions(srv)
    doc = json.loads(path.read_text())
    assert "order" not in doc["settings"]
    assert all("order_index" not in r.get("extra", {}) for v in doc["variants"] for r in v["runs"])
    assert [m for m, _ in seen] == ["A"] * 7 + ["B"] * 7 + ["C"] * 7


def test_stop_saves_every_unfinished_variant_and_resume_measures_them_again(tmp_path):
    stop = threading.Event()
    with TimedServer(Behaviour(itl_s=0.001)) as srv:
        n = {"runs": 0}

        def on_event(ev):
            if isinstance(ev, RunLanded):
                n["runs"] += 1
                if n["runs"] == 5:  # B's first decode: A has 2 runs, B 2, C 1
                    stop.set()

        runner = SweepRunner(parse_spec(spec_text(srv.url)), tmp_path, on_event=on_event, stop=stop)
        doc = json.loads(runner.run().read_text())
        assert runner.interrupted
        # C has only its warm-up: no decode run, so failed (as a sequential sweep would say)
        assert [v["status"] for v in doc["variants"]] == ["partial", "partial", "failed"]
        assert all(any("stopped by user" in e for e in v["errors"]) for v in doc["variants"])
        assert [len(v["runs"]) for v in doc["variants"]] == [2, 2, 1]
        before = len(completions(srv))
        resumed = SweepRunner(parse_spec(spec_text(srv.url)), tmp_path, resume=True)
        doc = json.loads(resumed.run().read_text())
        again = completions(srv)[before:]
    assert [v["status"] for v in doc["variants"]] == ["ok"] * 3
    assert [m for m, _ in again] == list("ABC") * 7  # the whole plan again, interleaved


def test_a_failing_variant_leaves_the_rotation_and_the_others_go_on(tmp_path, monkeypatch):
    from precmon.servers.protocols.openai import OpenAIServer

    real = OpenAIServer.stream

    def broken_for_b(self, req):
        if req.model == "B":
            from precmon.servers.base import ServerError

            raise ServerError("connection reset by peer")
        return real(self, req)

    monkeypatch.setattr(OpenAIServer, "stream", broken_for_b)
    with TimedServer(Behaviour(itl_s=0.001)) as srv:
        doc = json.loads(SweepRunner(parse_spec(spec_text(srv.url)), tmp_path).run().read_text())
        seen = completions(srv)
    by = {v["label"]: v for v in doc["variants"]}
    assert by["A"]["status"] == "ok" and by["C"]["status"] == "ok"
    assert by["B"]["status"] == "failed" and "connection reset" in by["B"]["errors"][0]
    assert [m for m, _ in seen] == list("AC") * 7


@pytest.mark.parametrize(
    ("extra", "line", "message"),
    [
        (
            '\n[[variant]]\nlabel = "L"\nprecision = "x"\nurl = "http://127.0.0.1:9"\nlaunch = ["srv"]\n',
            33,
            "variant #4 key 'launch': order = \"interleaved\" needs every variant switched by 'model'",
        ),
        (
            '\n[[variant]]\nlabel = "U"\nprecision = "x"\nurl = "http://127.0.0.1:9"\n',
            32,
            "variant #4 key 'url': order = \"interleaved\" needs every variant switched by 'model'",
        ),
        (
            '\n[[variant]]\nlabel = "M"\nprecision = "x"\nmodel = "m"\nurl = "http://127.0.0.1:9"\n',
            33,
            "variant #4 key 'url': order = \"interleaved\" needs one shared endpoint",
        ),
    ],
)
def test_what_cannot_be_interleaved_is_refused_with_file_line_key(extra, line, message):
    text = spec_text("http://127.0.0.1:1") + extra
    key = message.split("'")[1]
    assert [n for n, t in enumerate(text.splitlines(), 1) if t.startswith(f"{key} =")][-1] == line
    with pytest.raises(SpecError) as e:
        parse_spec(text)
    assert str(e.value).startswith(f"<sweep>:{line}: {message}"), str(e.value)


def test_order_values_and_place_are_checked():
    with pytest.raises(
        SpecError,
        match=r"<sweep>:12: \[defaults\] key 'order': expected \"sequential\" or \"interleaved\", got 'random'",
    ):
        parse_spec(spec_text("http://127.0.0.1:1", order='order = "random"'))
    with pytest.raises(SpecError, match=r"key 'order': expected \"sequential\" or \"interleaved\", got int 1"):
        parse_spec(spec_text("http://127.0.0.1:1", order="order = 1"))
    text = (
        HEAD.format(url="http://127.0.0.1:1", order="")
        + '\n[[variant]]\nlabel = "A"\nprecision = "a"\norder = "interleaved"\n'
    )
    with pytest.raises(SpecError, match=r"variant #1 key 'order': belongs in \[defaults\]"):
        parse_spec(text)
    assert (
        parse_spec(spec_text("http://127.0.0.1:1", order='order = "sequential"')).settings_dict().get("order") is None
    )


def test_ctrl_c_keeps_every_run_and_names_the_interrupt(tmp_path, monkeypatch):
    from precmon.servers.protocols.openai import OpenAIServer

    real, calls = OpenAIServer.stream, {"n": 0}

    def interrupting(self, req):
        calls["n"] += 1
        if calls["n"] == 4:
            raise KeyboardInterrupt
        return real(self, req)

    monkeypatch.setattr(OpenAIServer, "stream", interrupting)
    with TimedServer(Behaviour(itl_s=0.001)) as srv:
        runner = SweepRunner(parse_spec(spec_text(srv.url)), tmp_path)
        doc = json.loads(runner.run().read_text())
    assert runner.interrupted
    assert [len(v["runs"]) for v in doc["variants"]] == [1, 1, 1]
    assert all("interrupted (Ctrl-C): runs so far are kept" in v["errors"] for v in doc["variants"])
    assert [len(r) for r in runs_from_journal(tmp_path / "journal.jsonl").values()] == [1, 1, 1]
