"""A fresh sweep never lands on an earlier one's results (issue 39: a second run on the same
folder). Before, `precmon demo --out DIR` run twice, or two sweeps in one TUI session, rewrote
DIR/results.json with the second sweep's variants only and appended its runs to the first one's
journal, where a later `--resume` read both as one sweep. Now the results store refuses a fresh
sweep where results.json or a journal with runs is (nothing changed), the demo says so before it
builds or writes anything, and the TUI puts a session's second sweep in a `sweep-<time>/` of its
folder."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path

import pytest

from precmon.sweep.runner import SweepRunner
from precmon.sweep.spec import parse_spec
from precmon.sweep.store import FolderHasResults, earlier_results, new_child, unused_folder
from tests.fakes.timed_server import Behaviour, TimedServer

SPEC = '[[variant]]\nlabel = "A"\nprecision = "x"\nurl = "http://127.0.0.1:9"\n'
RESULTS = '{"schema": "an earlier sweep"}\n'
JOURNAL = '{"type": "run", "label": "A"}\n'


def _earlier(folder: Path, results: bool = True) -> dict[str, bytes]:
    folder.mkdir(parents=True, exist_ok=True)
    if results:
        (folder / "results.json").write_text(RESULTS)
    (folder / "journal.jsonl").write_text(JOURNAL)
    return {p.name: p.read_bytes() for p in folder.iterdir()}


@pytest.mark.parametrize("results", [True, False], ids=["results.json", "journal only"])
def test_a_fresh_sweep_is_refused_where_an_earlier_ones_runs_are(tmp_path, results):
    before = _earlier(tmp_path, results)
    with pytest.raises(FolderHasResults) as err:
        SweepRunner(parse_spec(SPEC), tmp_path).run()
    name = "results.json" if results else "journal.jsonl"
    assert str(tmp_path / name) in str(err.value) and "overwrite or mix" in str(err.value)
    after = {p.name: p.read_bytes() for p in tmp_path.iterdir() if p.name != "precmon.lock"}
    assert after == before  # nothing changed


def test_an_empty_folder_and_an_empty_journal_hold_nothing(tmp_path):
    assert earlier_results(tmp_path) is None and earlier_results(tmp_path / "missing") is None
    (tmp_path / "journal.jsonl").write_text("")
    (tmp_path / "quality-ref.json").write_text("{}")  # a reference or a sweep file is not a result
    assert earlier_results(tmp_path) is None
    assert unused_folder(tmp_path, "sweep") == (tmp_path, None)


def test_a_folder_with_results_gives_a_new_child_each_time(tmp_path, monkeypatch):
    import datetime as real_dt

    import precmon.sweep.store as store

    class Frozen(real_dt.datetime):
        @classmethod
        def now(cls, tz=None):
            return real_dt.datetime(2026, 12, 5, 17, 49, 49)

    monkeypatch.setattr(store.dt, "datetime", Frozen)
    _earlier(tmp_path)
    first, why = unused_folder(tmp_path, "sweep")
    assert why == f"{tmp_path / 'results.json'} exists"
    assert first == tmp_path / "sweep-174949" and not first.exists()
    first.mkdir()
    assert new_child(tmp_path, "sweep") == tmp_path / "sweep-174949-2"  # the same second: a suffix
    (tmp_path / "sweep-174949-2").mkdir()
    assert new_child(tmp_path, "sweep") == tmp_path / "sweep-174949-3"


def test_a_folder_another_precmon_writes_gives_a_new_child_and_says_why(tmp_path):
    from tests.sweep.test_folder_lock import _holder

    p = _holder(tmp_path)
    try:
        folder, why = unused_folder(tmp_path, "sweep")
        assert folder.parent == tmp_path and why is not None and f"in use by another precmon (pid {p.pid}" in why
    finally:
        p.kill()
        p.wait(10)


def test_the_sweep_command_refuses_in_one_line(tmp_path, capsys):
    from precmon.cli.commands.sweep_cmd import Written, run_headless

    before = _earlier(tmp_path)
    where = Written(tmp_path / "results.json")
    assert run_headless(parse_spec(SPEC), tmp_path, where=where) == 2
    assert where.refused
    err = capsys.readouterr().err.strip().splitlines()
    refusals = [line for line in err if "results.json" in line]
    expected = f"{tmp_path / 'results.json'} exists: a new sweep there would overwrite or mix with it"
    assert refusals == [f"precmon: --out {tmp_path}: {expected}"], err
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir() if p.name != "precmon.lock"} == before


@pytest.mark.parametrize("engine", ["llamacpp", "vllm"])
def test_the_demo_refuses_a_folder_with_results_before_it_builds_or_writes(tmp_path, engine):
    """Before, the vLLM demo wrote its sweep file into the folder first, and the llama.cpp demo
    built and started its server before the sweep found the folder taken."""
    out = tmp_path / "out"
    before = _earlier(out)
    proc = subprocess.run(
        [sys.executable, "-m", "precmon.cli", "demo", "--headless", "--engine", engine, "--out", str(out)],
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )
    assert proc.returncode == 2, proc.stderr[-2000:]
    (line,) = proc.stderr.strip().splitlines()
    assert f"{out / 'results.json'} exists" in line and "choose another --out" in line
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before  # no sweep file, no lock


def test_a_second_sweep_in_one_tui_session_gets_its_own_folder(tmp_path):
    from precmon.tui.app import PrecmonApp
    from precmon.tui.config import TuiConfig
    from tests.tui.conftest import fast_settings, no_meter_factory, wait_for

    out = tmp_path / "out"

    async def scenario(url: str) -> None:
        spec = tmp_path / "sweep.toml"
        spec.write_text(f'[[variant]]\nlabel = "Q4_K_M"\nprecision = "int4"\nurl = "{url}"\n')
        config = TuiConfig(url=url, sweep_spec=str(spec), settings=fast_settings(), out_dir=out, poll_server=False)
        app = PrecmonApp(config, meter_factory=no_meter_factory)
        async with app.run_test(size=(120, 40)) as pilot:
            await pilot.press("s")
            await pilot.pause(0.2)
            assert await wait_for(pilot, lambda: app.measuring is None, 30)
            first = {p.name: p.read_bytes() for p in out.iterdir() if p.is_file() and p.name != "precmon.lock"}
            assert json.loads(first["results.json"])["variants"][0]["status"] == "ok"
            await pilot.press("s")
            await pilot.pause(0.2)
            assert await wait_for(pilot, lambda: app.measuring is None, 30)
            again = {p.name: p.read_bytes() for p in out.iterdir() if p.is_file() and p.name != "precmon.lock"}
            assert again == first  # the first sweep's results and journal as they were
            (second,) = [p for p in out.iterdir() if p.is_dir() and p.name.startswith("sweep-")]
            doc = json.loads((second / "results.json").read_text())
            assert [v["status"] for v in doc["variants"]] == ["ok"]
            assert len((second / "journal.jsonl").read_text().splitlines()) >= 2

    with TimedServer(Behaviour(itl_s=0.001, prefill_s_per_token=0.0001)) as srv:
        asyncio.run(scenario(srv.url))


@pytest.mark.parametrize("front", ["runner", "sweep command"])
def test_a_refused_fresh_sweep_still_stops_what_a_killed_one_left_running(tmp_path, capsys, front):
    """A sweep killed (`kill -9`) during its first variant leaves a journal, no results.json, and
    its launched server running. Any sweep on the folder used to stop that server; a fresh one is
    now refused there, and must not leave it running for good (`demo` has no `--resume`)."""
    from precmon.cli import main
    from precmon.sweep.launched import record_launch
    from tests.sweep.test_launched_leftovers import _gone

    before = _earlier(tmp_path, results=False)
    server = subprocess.Popen(["sleep", "9147"], start_new_session=True)
    try:
        assert record_launch(tmp_path, "A", server.pid, ["sleep", "9147"]) is not None
        if front == "runner":
            said: list[str] = []
            with pytest.raises(FolderHasResults):
                SweepRunner(parse_spec(SPEC), tmp_path, on_event=lambda ev: said.append(getattr(ev, "text", ""))).run()
        else:
            spec = tmp_path.parent / f"{tmp_path.name}.toml"
            spec.write_text(SPEC)
            assert main(["sweep", str(spec), "--headless", "--out", str(tmp_path)]) == 2
            said = capsys.readouterr().err.splitlines()
        assert _gone(server.pid), "the leftover server still runs"
        assert any(f"A: stopping its server left running by an earlier run (pid {server.pid})" in s for s in said), said
        assert (tmp_path / "journal.jsonl").read_bytes() == before["journal.jsonl"]
        assert list((tmp_path / "launched").iterdir()) == []
    finally:
        if server.poll() is None:
            server.kill()
        server.wait(10)
