"""The phase table (core/phases.py) answers what each run phase means."""

from __future__ import annotations

from precmon.core import phases


def test_every_phase_name_is_unique_and_listed():
    assert len(phases.NAMES) == len(set(phases.NAMES)) == len(phases.PHASES)
    assert phases.IDLE not in phases.NAMES  # a power window, never a run


def test_warmup_is_the_only_unmeasured_phase():
    assert [p.name for p in phases.PHASES if not p.measured] == [phases.WARMUP]
    assert phases.measured("decode") and not phases.measured("warmup")
    assert phases.measured("a_phase_from_a_newer_file")


def test_decode_windows_and_adaptive_targets():
    assert phases.DECODE_WINDOW == {"decode", "long_context_decode", "depth_decode"}
    assert phases.TARGET_FIELD == {
        "decode": "decode_tok_s",
        "prefill": "prefill_ms_per_token",
        "ttft": "ttft_s",
        "long_context_decode": "decode_tok_s",
    }


def test_every_registry_metric_names_a_phase_of_the_table():
    """A metric's `phase` (core/registry.py) is a phase of the table or none: a misspelt phase would
    make a metric whose runs are never found."""
    from precmon.core import registry

    named = {m.key: m.phase for m in registry.metrics() if m.phase}
    assert named and all(p in phases.NAMES for p in named.values()), named
