"""Every record precmon writes reads back as what it was: a Run of each phase, failed runs (connection
refused, HTTP 5xx, a timeout), a VariantResult of each status, and the journal's records. `--resume`
refused a results file holding a failed request because the writer dropped None fields that the
reader required."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from precmon.core.schema import (
    Host,
    Run,
    RunExtra,
    ServerInfo,
    VariantResult,
    run_from_json,
    to_json,
    variant_from_json,
)
from precmon.measure.bench import Bench, BenchSettings
from precmon.measure.results import dumps_strict
from precmon.servers.base import ServerError
from precmon.servers.detect import make_server
from precmon.sweep.store import ResultStore, read_journal
from tests.fakes.timed_server import Behaviour, TimedServer

PLAN = BenchSettings(
    output_tokens=8, decode_prompt_tokens=8, prefill_tokens=[32], ttft_tokens=32, repeats=1, warmup=0, idle_s=0
)
PHASES = ("idle", "warmup", "decode", "prefill", "ttft", "long_context_decode", "concurrency")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _through_disk(d: dict) -> dict:
    return json.loads(dumps_strict(d))


def _runs_of_every_kind() -> list[Run]:
    runs = [Run(phase=p) for p in PHASES]  # nothing measured at all: every optional field absent
    runs += [
        Run(
            phase="decode",
            prompt_tokens=9,
            output_tokens=8,
            ttft_s=0.01,
            decode_tok_s=500.0,
            prefill_ms_per_token=1.1,
            itl_ms_p50=2.0,
            itl_ms_p99=3.0,
            power_w=30.0,
            energy_j=1.5,
            cached_tokens=0,
            server_timings={"predicted_per_second": 510.0},
            target_prompt_tokens=8,
            repeat=0,
            extra=RunExtra(energy_tokens=7),
        ),
        # what Bench._one records for a request that failed: no counts, only the reason
        Run(phase="prefill", ok=False, reason="HTTP 500 from /v1/completions: boom", target_prompt_tokens=32, repeat=1),
        Run(phase="decode", ok=False, reason="connection refused", target_prompt_tokens=8, repeat=0),
        Run(phase="ttft", ok=False, reason="timed out after 1 s", target_prompt_tokens=32, repeat=2),
    ]
    return runs


@pytest.mark.parametrize("run", _runs_of_every_kind(), ids=lambda r: f"{r.phase}-{'ok' if r.ok else 'failed'}")
def test_every_run_round_trips(run):
    back = run_from_json(_through_disk(to_json(run)))
    assert back == run
    assert to_json(back) == to_json(run)


@pytest.mark.parametrize("status", ["ok", "partial", "failed"])
def test_every_variant_status_round_trips(status):
    v = VariantResult(
        label="Q4_K_M",
        precision="int4",
        model=None,
        server=ServerInfo(kind="llamacpp", url="http://127.0.0.1:1"),
        status=status,
        errors=["HTTP 500 from /v1/completions: boom"] if status != "ok" else [],
        runs=_runs_of_every_kind(),
        strategy="url",
        partial_reason="x" if status == "partial" else None,
    )
    back = variant_from_json(_through_disk(to_json(v)))
    assert to_json(back) == to_json(v)
    assert back.runs == v.runs


def _measured(behaviour: Behaviour | None, timeout_s: float = 60.0) -> VariantResult:
    settings = BenchSettings(**(PLAN.to_dict() | {"timeout_s": timeout_s}))
    if behaviour is None:  # nothing listens: connection refused on every request
        return Bench(make_server(f"http://127.0.0.1:{_free_port()}", kind="openai"), settings).run()
    with TimedServer(behaviour) as srv:
        return Bench(make_server(srv.url), settings).run()


@pytest.mark.parametrize(
    "behaviour,timeout_s",
    [(None, 5.0), (Behaviour(http_status=500), 60.0), (Behaviour(base_latency_s=2.0, itl_s=0.001), 0.3)],
    ids=["connection-refused", "http-500", "timeout"],
)
def test_a_measured_failed_variant_and_its_journal_read_back(tmp_path, behaviour, timeout_s):
    res = _measured(behaviour, timeout_s)
    assert res.status == "failed" and any(not r.ok for r in res.runs)
    store = ResultStore(tmp_path, PLAN.to_dict(), Host())
    for run in res.runs:
        store.add_run(res.label, run)
    store.put_variant(res)

    again = ResultStore(tmp_path, PLAN.to_dict(), Host())
    (back,) = again.load_existing()
    assert to_json(back) == to_json(res)
    records = read_journal(tmp_path / "journal.jsonl")
    assert not records.problems and not records.torn_tail
    assert [run_from_json(r["run"]) for r in records.records if r["type"] == "run"] == res.runs
    (vrec,) = [r for r in records.records if r["type"] == "variant"]
    assert to_json(variant_from_json(vrec["variant"])) == to_json(res)


SPEC = """
[defaults]
output_tokens = 16
decode_prompt_tokens = 8
prefill_tokens = [32]
ttft_tokens = 32
repeats = 3
warmup = 0
idle_s = 0
cooldown_s = 0

[[variant]]
label = "F"
precision = "x"
url = "{url}"
"""


def _sweep(tmp_path, url: str, *extra: str, wait: bool = True):
    spec = tmp_path / "sweep.toml"
    spec.write_text(SPEC.format(url=url))
    argv = [sys.executable, "-m", "precmon.cli", "sweep", str(spec), "--headless", "--out", str(tmp_path / "o")]
    if not wait:
        return subprocess.Popen(argv + list(extra), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return subprocess.run(argv + list(extra), capture_output=True, text=True, timeout=120)


def test_resume_continues_a_sweep_whose_request_failed(tmp_path):
    """The reported reproduction: a variant whose request failed, then `--resume` (was exit 2)."""
    with TimedServer(Behaviour(http_status=500)) as srv:
        first = _sweep(tmp_path, srv.url)
        assert first.returncode == 1, first.stderr
        second = _sweep(tmp_path, srv.url, "--resume")
    assert second.returncode == 1, second.stderr  # measured again (and failed again), not refused
    assert "cannot be continued" not in second.stderr and "Traceback" not in second.stderr


@pytest.mark.parametrize("dies_at", ["tokenize", "stream"])
def test_a_server_that_dies_between_steps_leaves_a_failed_run(dies_at):
    """The server dies before the second decode: whether its tokenizer request (sizing the prompt)
    or its completion request meets the closed port first, that step is a failed run with the
    reason and the variant stops (the kill -9 test below met the tokenizer now and then, and the
    step left no run)."""
    with TimedServer(Behaviour()) as srv:
        server = make_server(srv.url)
        refused = ServerError(f"cannot connect to {srv.url}: connection refused or host unreachable")
        streams = []
        dead = []

        def wrap(name, real):
            def call(*args, **kwargs):
                if name == "stream":
                    streams.append(1)
                    if dies_at == "stream" and len(streams) == 2:  # after the prompt was sized
                        dead.append(name)
                if dead:  # from then on every request of either kind
                    raise refused
                out = real(*args, **kwargs)
                if dies_at == "tokenize" and len(streams) == 1 and name == "stream":
                    dead.append("tokenize")  # right after the first completion
                return out

            return call

        server.tokenize = wrap("tokenize", server.tokenize)
        server.stream = wrap("stream", server.stream)
        res = Bench(server, BenchSettings(**(PLAN.to_dict() | {"repeats": 2}))).run()
    assert [(r.phase, r.repeat, r.ok) for r in res.runs] == [("decode", 0, True), ("decode", 1, False)]
    failed = res.runs[1]
    assert failed.prompt_tokens is None and failed.reason == str(refused)
    assert res.status == "partial" and str(refused) in res.errors  # the first decode was measured
    assert dead == [dies_at]


def test_a_server_that_dies_before_a_concurrency_level_leaves_a_failed_level():
    """The level's prompts are sized by the server's tokenizer too: refused, the level is a failed
    run with the reason (it raised past the step before, leaving no run)."""
    with TimedServer(Behaviour()) as srv:
        server = make_server(srv.url)
        refused = ServerError(f"cannot connect to {srv.url}: connection refused or host unreachable")
        plain = BenchSettings(**(PLAN.to_dict() | {"concurrency": [2]}))
        streams = []
        real_stream, real_tokenize = server.stream, server.tokenize

        def stream(*args, **kwargs):
            streams.append(1)
            return real_stream(*args, **kwargs)

        def tokenize(*args, **kwargs):
            if len(streams) == 3:  # decode, prefill and ttft done: the level's prompts are next
                raise refused
            return real_tokenize(*args, **kwargs)

        server.stream, server.tokenize = stream, tokenize
        res = Bench(server, plain).run()
    assert [r.phase for r in res.runs] == ["decode", "prefill", "ttft", "concurrency"]
    level = res.runs[-1]
    assert not level.ok and level.reason == str(refused) and level.extra.streams == 2
    assert len(streams) == 3  # no stream of the level was sent


@pytest.mark.parametrize("phase", ["depth_fill", "depth_prefill", "depth_decode"])
def test_a_server_that_dies_inside_a_depth_step_leaves_a_failed_run(phase):
    """A depth step sizes its prefix, then each prompt after it, with the server's tokenizer: gone
    before any of them, that request is a failed run at its depth (it raised past the step before)."""
    order = ["decode", "prefill", "ttft", "depth_fill", "depth_prefill", "depth_decode"]
    with TimedServer(Behaviour(prefix_cache=True)) as srv:
        server = make_server(srv.url)
        refused = ServerError(f"cannot connect to {srv.url}: connection refused or host unreachable")
        streams = []
        real_stream, real_tokenize = server.stream, server.tokenize

        def stream(*args, **kwargs):
            if len(streams) >= order.index(phase):
                raise refused
            streams.append(1)
            return real_stream(*args, **kwargs)

        def tokenize(*args, **kwargs):
            if len(streams) >= order.index(phase):  # the steps before were measured: the server is gone
                raise refused
            return real_tokenize(*args, **kwargs)

        server.stream, server.tokenize = stream, tokenize
        res = Bench(server, BenchSettings(**(PLAN.to_dict() | {"depth": [64]}))).run()
    assert [(r.phase, r.ok) for r in res.runs] == [(p, p != phase) for p in order[: order.index(phase) + 1]]
    failed = res.runs[-1]
    assert failed.reason == str(refused) and failed.depth_tokens == 64
    assert str(refused) in res.errors


SERVER = """
import sys
sys.path.insert(0, {root!r})
from tests.fakes.timed_server import Behaviour, _Handler, _Server
httpd = _Server(("127.0.0.1", {port}), _Handler)
httpd.behaviour = Behaviour(itl_s=0.02)
httpd.serve_forever()
"""


def test_resume_after_the_server_was_killed_mid_sweep(tmp_path):
    """kill -9 of a (router) server mid-sweep: its refused requests are failed runs; `--resume` was exit 2."""
    port = _free_port()
    root = str(Path(__file__).resolve().parents[2])
    server = subprocess.Popen([sys.executable, "-c", SERVER.format(root=root, port=port)])
    try:
        url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                time.sleep(0.1)
        sweep = _sweep(tmp_path, url, wait=False)
        journal = tmp_path / "o" / "journal.jsonl"
        while time.monotonic() < deadline and not (journal.exists() and '"type": "run"' in journal.read_text()):
            time.sleep(0.05)
        server.kill()
        assert sweep.wait(60) == 1
    finally:
        server.kill()
        server.wait(10)
    doc = json.loads((tmp_path / "o" / "results.json").read_text())
    assert any(not r["ok"] and "prompt_tokens" not in r for r in doc["variants"][0]["runs"])  # a refused request
    again = _sweep(tmp_path, url, "--resume")
    assert again.returncode == 1, again.stderr
    assert "cannot be continued" not in again.stderr and "Traceback" not in again.stderr
