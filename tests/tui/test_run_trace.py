"""The per-second series of the run chart, its bars, and watch mode's state line (plain Python)."""

from __future__ import annotations

from precmon.power.base import Sample
from precmon.servers.watch.live_rate import LiveRate, no_live_source
from precmon.tui.run_trace import RunTrace, fill_seconds, watts_per_second
from precmon.tui.watch_state import watch_state
from precmon.tui.widgets.run_chart import bar_rows


def test_watts_per_second_is_the_mean_of_each_second_and_skips_missing_readings():
    samples = [
        Sample("g", 10.0, 100.0),
        Sample("g", 10.5, 200.0),
        Sample("g", 11.2, None),
        Sample("g", 12.9, 50.0),
        Sample("g", 12.1, float("nan")),
    ]
    assert watts_per_second(samples) == ((10, 150.0), (12, 50.0))


def test_fill_seconds_leaves_gaps_as_none():
    assert fill_seconds([(3, 1.0), (5, 2.0)]) == [1.0, None, 2.0]
    assert fill_seconds([(3, 1.0)], last_s=5) == [1.0, None, None]
    assert fill_seconds([]) == []


def test_trace_takes_one_reading_a_second_and_names_its_source():
    trace = RunTrace()
    trace.start("Q4_K_M")
    for i, tok in enumerate([0.0, 310.0, 380.0]):
        trace.add_rate(LiveRate(tok, "llama.cpp /slots + /metrics", 1.0, 1, taken_s=100.2 + i))
    trace.add_rate(LiveRate(390.0, "llama.cpp /slots + /metrics", 0.5, 1, taken_s=102.7))  # same second: mean
    trace.add_rate(LiveRate(200.0, "llama.cpp /slots + /metrics", 2.0, 1, taken_s=104.1))  # a missed second
    view = trace.view()
    assert view.label == "Q4_K_M"
    assert view.tok_s == (0.0, 310.0, 385.0, None, 200.0)
    assert (
        view.tok_source == "tok/s each second from llama.cpp /slots + /metrics (the server's token counts, all clients)"
    )
    assert trace.view() is view  # nothing changed: the same view, so no repaint
    trace.start("F16")
    assert trace.view().tok_s == () and trace.view().label == "F16"


def test_trace_without_a_live_source_says_why_not_zero():
    trace = RunTrace()
    trace.add_rate(no_live_source("ollama"))
    view = trace.view()
    assert view.tok_s == () and view.empty  # nothing to draw: the chart is not shown
    assert view.tok_source.startswith("tok/s n/a: no live token source: Ollama reports token counts only when")


def test_trace_watts_name_scope_and_channel_or_say_there_are_none():
    trace = RunTrace()
    trace.set_watts(((7, 300.0), (9, 310.0), (10, 50.0)), "gpu", "NVIDIA H200")
    assert trace.view().watts == (300.0, None, 310.0)  # second 10 is still filling: not yet
    assert trace.view().watts_source == "W each second, gpu scope: NVIDIA H200"
    view = trace.view()
    trace.set_watts(((7, 300.0), (9, 310.0), (10, 52.0)), "gpu", "NVIDIA H200")
    assert trace.view() is view  # only the filling second moved: no repaint
    trace.set_watts((), None, None)
    assert trace.view().watts_source == "W n/a: no power source with watts here (precmon doctor)"


def test_bar_rows_scale_to_the_peak_right_aligned_with_gaps_and_zeros_distinct():
    assert bar_rows([8.0, 4.0, 0.0, None, 1.0], width=6, rows=2) == [
        " █    ",
        " ██ ·▂",
    ]
    assert bar_rows([0.0, 0.0], width=2, rows=1) == ["  "]
    assert bar_rows([1.0, 2.0, 3.0], width=2, rows=1) == ["▅█"]  # the newest that fit


def test_watch_state_words():
    url = "http://u:secret@127.0.0.1:8080"
    rate = LiveRate(12.0, "llama.cpp /slots", 1.0, 1)
    assert watch_state(url, True, rate).word == "DRIVING"
    passive = watch_state(url, False, rate)
    assert passive.word == "PASSIVE" and "live source: llama.cpp /slots" in passive.detail
    assert "secret" not in passive.text
    none = watch_state(url, False, no_live_source("ollama"))
    assert none.word == "NO LIVE SOURCE" and "Ollama reports token counts only when a request ends" in none.detail
    assert watch_state(url, False, None).word == "PASSIVE"
    own = watch_state(url, False, rate, measuring="sweep")  # precmon's own sweep is not other clients'
    assert own.word == "DRIVING" and "precmon's own sweep" in own.detail
    assert watch_state(None, False, None).word == "NO SERVER"


def test_big_font_draws_format_value_text_and_picks_the_scale_that_fits():
    from precmon.tui.big_font import best_scale, big_lines, big_width

    assert big_lines("1.0") == [
        " █    ███",
        "██    █ █",
        " █    █ █",
        " █    █ █",
        "███ █ ███",
    ]
    assert big_width("381.0", 2) == 2 * (4 * 3 + 1) + 4 * 2  # 4 digits and ".", gaps doubled too
    assert big_lines("n/a") is None  # no glyph: Textual's digits instead
    assert best_scale("381.0", 40) == 2 and best_scale("381.0", 20) == 1 and best_scale("381.0", 10) == 0


def test_a_two_second_poll_fills_both_seconds_it_covers_and_a_missed_poll_stays_a_gap():
    trace = RunTrace(poll_s=2.0)  # `--refresh-s 2`: the live rate is read every 2 s
    for i, tok in enumerate([100.0, 300.0]):
        trace.add_rate(LiveRate(tok, "llama.cpp /slots", 2.0, 1, taken_s=100.4 + 2 * i))
    trace.add_rate(LiveRate(50.0, "llama.cpp /slots", 4.0, 1, taken_s=106.4))  # one poll missed
    assert trace.view().tok_s == (100.0, 100.0, 300.0, 300.0, None, None, 50.0, 50.0)


def test_driving_by_a_bench_says_why_its_tok_s_is_unsure():
    """Watch mode during a bench or sweep started in the TUI: the readout says "⚠ unsure: see
    below", so the DRIVING line must say why (it dropped the reason)."""
    rate = LiveRate(12.0, "llama.cpp /slots", 1.0, 1)
    why = "unsure — uneven: 2–45 tok/s within 5 s"
    own = watch_state("http://127.0.0.1:8080", False, rate, measuring="bench", unsure=why)
    assert own.word == "DRIVING" and "precmon's own bench" in own.detail
    assert f"tok/s {why}" in own.detail
    assert "unsure" not in watch_state("http://127.0.0.1:8080", False, rate, measuring="bench").detail
