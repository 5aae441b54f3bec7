"""A decode run's power and energy without the request's own prefill (docs/design.md §4: the decode phase).

The meter's window spans a whole request: send → prompt processing → first token → last token.
`cut_prefill` takes the part before the first token out: its energy is the channel's mean sampled
watts over that span × its length (an energy counter is read only at the window's edges, so the
samples are what there is inside it). What remains holds the tokens after the first, which is
what J/token divides by (`extra["energy_tokens"]`). The whole-request windows of every channel stay
in `extra["power_windows"]`.

J/token divides by `output_tokens − 1` on the assumption that the first text chunk holds one token;
a server that sends several in its first chunk (speculative decoding) makes it read slightly low.

The prompt of a decode request is short (128 tokens by default), so the cut is small, a few percent
of the request's time (more on a slow CPU), but it is prefill's energy, not decode's.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

from precmon.core.schema import Run
from precmon.power.base import EnergyWindow, SampleHistory
from precmon.servers.base import StreamResult


def cut_prefill(
    meter: SampleHistory,
    t0_s: float | None,
    w: EnergyWindow,
    run: Run,
    sres: StreamResult,
    nodes: Sequence[EnergyWindow] = (),
) -> bool:
    """Cut `run`'s power/energy to first token → end; False (run untouched) when it cannot be done.

    Args:
        meter: the meter whose window `w` is; its `history(channel_id, seconds)` gives the samples.
        t0_s: `time.monotonic()` just before the window began (used when `w` has no `start_s`).
        w: the headline window of the whole request (over several nodes, their sum).
        run: the measured run; its `power_w`, `energy_j` and `extra` are updated.
        sres: the request's stream (its `first_text_s` is on the `perf_counter` clock).
        nodes: over several nodes, each node's window (power/fleet.py): each is cut by its own
            samples (another node's: its reading at the window's edge), `extra.power_by_node`'s
            parts with it; one that cannot be cut leaves the whole run uncut.
    """
    tokens = run.output_tokens or 0
    if t0_s is None or sres.first_text_s is None or tokens < 2:
        return False
    t_first = sres.first_text_s + (time.monotonic() - time.perf_counter())  # onto the meter's clock
    # The window's own first reading is its edge: a few ms after t0, or a tick before it when the
    # boundary read was late; measured from t0 that gap would be booked as decode.
    start = w.start_s if w.start_s is not None else t0_s
    pre_s = t_first - start
    dec_s = w.duration_s - pre_s
    if pre_s <= 0 or dec_s <= 0:
        return False
    cuts = []
    for part in nodes or [w]:
        energy_j = part.avg_watts * w.duration_s if nodes else w.energy_j  # a node's over the sum's window
        watts, n = _prefill_watts(meter, t0_s, part.channel_id, start, t_first)
        if watts is None or watts * pre_s >= energy_j:
            return False
        cuts.append((energy_j - watts * pre_s, watts, n))
    pre_j = sum(watts * pre_s for _, watts, _ in cuts)
    run.energy_j = sum(dec_j for dec_j, _, _ in cuts)
    run.power_w = run.energy_j / dec_s
    run.extra.power_window = "first token → end of stream"
    run.extra.energy_tokens = tokens - 1
    run.extra.prefill_part = {
        "seconds": round(pre_s, 4),
        "energy_j": round(pre_j, 4),
        "avg_w": round(pre_j / pre_s, 3),
        "samples": sum(n for _, _, n in cuts),
    }
    if nodes and isinstance(run.extra.power_by_node, list):
        for part, (dec_j, _, _) in zip(run.extra.power_by_node, cuts, strict=False):
            part.update(power_w=round(dec_j / dec_s, 3), energy_j=round(dec_j, 4))
    return True


def _prefill_watts(
    meter: SampleHistory, t0_s: float, channel_id: str, start: float, t_first: float
) -> tuple[float | None, int]:
    """A channel's watts before the first token: the mean of its samples inside [start, t_first],
    else its last sample before t_first (another node's: its edge reading); and how many were inside."""
    samples = [
        (x.t_s, x.watts) for x in meter.history(channel_id, time.monotonic() - t0_s + 1.0) if x.watts is not None
    ]
    inside = [watts for t_s, watts in samples if start <= t_s <= t_first]
    before = [watts for t_s, watts in samples if t_s <= t_first]
    return (sum(inside) / len(inside) if inside else (before[-1] if before else None)), len(inside)
