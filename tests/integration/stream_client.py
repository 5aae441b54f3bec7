"""Another client for the watch-mode tests: streams one long generation from llama-server's
`/completion` in its own process and writes, per event, `{"t": time.monotonic(), "n": tokens
predicted so far}` as a JSON line (with `"ms"`/`"pn"`: the server's own `predicted_ms` and
`predicted_n` of the event, `timings_per_token`: a starved client reads events late, the server's
clock does not), then `{"timings": …}` from the last event.

Run as `python -m tests.integration.stream_client URL N_PREDICT OUT [MAX_S]`: with MAX_S it hangs
up after that many seconds whatever N_PREDICT says (llama-server then drops the request), so a
starved server cannot stretch a test. CLOCK_MONOTONIC is one clock for every process on the
machine, so the test can line these times up with its own reads.
"""

from __future__ import annotations

import json
import sys
import time

import httpx


def main(url: str, n_predict: int, out: str, max_s: float | None = None) -> int:
    body = {"prompt": "Once upon a time", "n_predict": n_predict, "stream": True, "ignore_eos": True}
    body["cache_prompt"] = False
    body["timings_per_token"] = True  # each event carries the server's own clock: the truth under load
    last: dict = {}
    deadline = time.monotonic() + max_s if max_s is not None else None
    with open(out, "w") as f, httpx.Client(timeout=300.0) as client:
        with client.stream("POST", url.rstrip("/") + "/completion", json=body) as r:
            for line in r.iter_lines():
                if not line.startswith("data: "):
                    continue
                event = json.loads(line[6:])
                timings = event.get("timings") or {}
                row = {"t": time.monotonic(), "n": event.get("tokens_predicted")}
                if isinstance(timings.get("predicted_ms"), (int, float)):
                    row["ms"], row["pn"] = timings["predicted_ms"], timings.get("predicted_n")
                f.write(json.dumps(row) + "\n")
                f.flush()
                last = event
                if deadline is not None and row["t"] >= deadline:
                    break
        f.write(json.dumps({"timings": last.get("timings")}) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], int(sys.argv[2]), sys.argv[3], float(sys.argv[4]) if len(sys.argv) > 4 else None))
