"""The summary (measure/summary.py) is idempotent: summarising the same runs again changes nothing,
and a second summary takes out exactly what the first added (never a caller's line that merely
starts like one of its notes, which a replace-by-prefix summary deleted)."""

from __future__ import annotations

import copy

from precmon.core.schema import to_json
from precmon.measure.bench import Bench, BenchSettings
from precmon.measure.trust.server_truth import NOTE_TIMINGS
from precmon.servers.detect import make_server
from tests.fakes.timed_server import Behaviour, TimedServer

PLAN = BenchSettings(
    output_tokens=8, decode_prompt_tokens=8, prefill_tokens=[32, 100000], ttft_tokens=48, repeats=2, warmup=0, idle_s=0
)


def _bench() -> Bench:
    with TimedServer(Behaviour(itl_s=0.001, stop_after=6)) as srv:  # early stops: excluded runs, a failed variant
        bench = Bench(make_server(srv.url), PLAN)
        bench.run()
    return bench


def test_a_second_summary_of_the_same_runs_changes_nothing():
    bench = _bench()
    once = copy.deepcopy(to_json(bench.result))
    assert once["errors"] and "warnings" in once
    bench.summarize()
    bench.summarize()
    assert to_json(bench.result) == once


def test_a_callers_lines_survive_a_second_summary():
    bench = _bench()
    mine = f"{NOTE_TIMINGS} a line of the caller's own that starts like the summary's note"
    bench.result.note(mine)
    bench.result.errors.append("the launched server exited")
    bench.summarize()
    res = bench.result
    assert mine in res.notes and mine in res.errors
    assert res.errors[0] == "the launched server exited"  # the caller's cause, first
    assert len(res.errors) == len(set(res.errors))  # nothing of the summary twice
