"""Depth after prefill runs on a real llama-server with a unified KV cache (`-np 4 -kvu`).

The prefill runs' prompts stay in other slots' cells of the one shared buffer and llama.cpp
attends over all of them, so without an erase the d0 depth decode reads well below the plain
decode (which ran first, on an empty buffer) and `depth-baseline-mismatch:` fires; a server
precmon launched has its slots erased before each step of the plan and the two agree within noise.
Here the erase and its record are asserted; the timings are printed (see the first test). The
launched case runs twice: as `precmon bench`/`sweep` call the server, and through the TUI's
wrapper (`tui/workers/background.abortable`), which once hid the erase: the TUI's depth rows on
the H200 ran on the other slots' cells.
`--slot-save-path`: this build (0.3.36) answers every /slots action 501 without it.
"""

from __future__ import annotations

import threading

import pytest

from precmon.measure.bench import Bench, BenchSettings
from precmon.measure.depth.slots import NOTE_NOT_ERASED
from precmon.measure.depth.steps import BASELINE, BASELINE_GAP_MAX
from precmon.servers.protocols.llamacpp import LlamaCppServer
from precmon.tui.workers.background import abortable

pytestmark = pytest.mark.integration

SETTINGS = BenchSettings(
    output_tokens=32,
    decode_prompt_tokens=16,
    prefill_tokens=[1536],
    ttft_tokens=None,
    repeats=3,
    warmup=1,
    idle_s=0.0,
    depth=[0, 2048],
)


def start(factory, models, tmp_path, save: bool):
    extra = ["-np", "4", "-kvu"] + (["--slot-save-path", str(tmp_path)] if save else [])
    return factory(
        model=models["Q4_K_M"], ctx_tokens=8192, threads=1, extra=extra
    )  # 1: no spin barrier on a shared 2-core box


def figures(res):
    fig = res.validity["depth_baseline"]
    rates = [(r.phase, r.depth_tokens, r.decode_tok_s) for r in res.runs if "decode" in r.phase]
    print("decode runs:", rates)
    print("baseline:", fig, "slots:", res.validity.get("depth_slots"))
    return fig


def test_without_the_erase_the_d0_decode_pays_for_the_other_slots(llama_server_factory, tiny_models, tmp_path):
    proc = start(llama_server_factory, tiny_models, tmp_path, save=True)
    server = LlamaCppServer(proc.url)
    res = Bench(server, SETTINGS).run()  # not launched by precmon: left as it is
    server.close()
    proc.stop()
    fig = figures(res)
    # The timing itself is printed, not asserted: on the shared 2-core box other engineers' load
    # moves the plain decode by 2-4x run to run (seen: 72/241/52 tok/s). Quiet, slot 0's decode
    # read 125 tok/s empty, 83 with 3 x 1500 cells in slots 1-3, 115 after the erase.
    assert any(w.startswith(BASELINE) for w in res.warnings) == (fig["gap"] < -BASELINE_GAP_MAX)
    assert res.validity["depth_slots"]["erased"] is False
    assert any(n.startswith(NOTE_NOT_ERASED) and "did not launch" in n for n in res.notes)


@pytest.mark.parametrize("through", ["plain", "tui"])
def test_a_launched_servers_slots_are_erased_and_d0_matches(llama_server_factory, tiny_models, tmp_path, through):
    proc = start(llama_server_factory, tiny_models, tmp_path, save=True)
    server = LlamaCppServer(proc.url)
    called = server if through == "plain" else abortable(server, threading.Event())
    res = Bench(called, SETTINGS, launched=True).run()
    server.close()
    proc.stop()
    fig = figures(res)
    slots = res.validity["depth_slots"]
    # every step of the plan starts on empty slots (warm-up, 3 decodes, 3 prefills, 2 depth steps), and
    # at d0 every request after the step's first (3 prefills and 3 decodes: nothing cached to keep)
    plan_steps = SETTINGS.warmup + SETTINGS.repeats * (1 + len(SETTINGS.prefill_tokens)) + len(SETTINGS.depth)
    at_d0 = SETTINGS.repeats * (len(SETTINGS.prefill_tokens) + 1) - 1
    assert slots["erased"] is True and slots["steps"] == plan_steps + at_d0 and slots["slots"] == 4
    assert slots["cells_erased"] > 0
    assert any(w.startswith(BASELINE) for w in res.warnings) == (fig["gap"] < -BASELINE_GAP_MAX)
    assert res.status == "ok", res.errors


def test_a_server_that_refuses_the_erase_is_noted(llama_server_factory, tiny_models, tmp_path):
    proc = start(llama_server_factory, tiny_models, tmp_path, save=False)
    server = LlamaCppServer(proc.url)
    settings = BenchSettings(**(SETTINGS.to_dict() | {"prefill_tokens": [], "repeats": 1, "depth": [0]}))
    res = Bench(server, settings, launched=True).run()
    server.close()
    proc.stop()
    slots = res.validity["depth_slots"]
    assert slots["erased"] is False and "--slot-save-path" in slots["refused"]
    assert any(n.startswith(NOTE_NOT_ERASED) and "refused" in n for n in res.notes)
