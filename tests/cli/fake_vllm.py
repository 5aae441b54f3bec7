"""A stand-in for `python -m vllm.entrypoints.openai.api_server` in a fake vLLM venv (tests only).

`precmon demo --engine vllm` launches `<venv>/bin/python -m vllm.entrypoints.openai.api_server
--port P --served-model-name NAME ...`; the fake venv's `bin/python` runs this script instead, which
serves `tests.fakes.wire_servers`' vLLM fake on 127.0.0.1:P under that name. It appends its pid to
$FAKE_VLLM_PIDS (so a test can check that nothing is left running) and ends by itself after
$FAKE_VLLM_LIFETIME_S (120 s), whatever happens to the test. FAKE_VLLM_ITL_S sets the token pace;
FAKE_VLLM_FIRST_ITL_S, when set, that of the first server only (the one a test kills mid-stream).
"""

from __future__ import annotations

import argparse
import os
import threading

from tests.fakes.timed_server import _Server
from tests.fakes.wire_servers import WireBehaviour, _WireHandler


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("-m", dest="module")
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--served-model-name", required=True)
    p.add_argument("--max-model-len", type=int, default=2048)
    args, _ = p.parse_known_args()
    pids = os.environ["FAKE_VLLM_PIDS"]
    first = os.path.getsize(pids) == 0
    with open(pids, "a") as fh:
        fh.write(f"{os.getpid()}\n")
    itl_s = os.environ.get("FAKE_VLLM_ITL_S", "0.0005")
    if first:
        itl_s = os.environ.get("FAKE_VLLM_FIRST_ITL_S", itl_s)
    behaviour = WireBehaviour(
        kind="vllm",
        model=args.served_model_name,
        models=(args.served_model_name,),
        quantization=None,
        n_ctx=args.max_model_len,
        itl_s=float(itl_s),
        prefill_s_per_token=0.00002,
        base_latency_s=0.001,
        honour_ignore_eos=True,
        honour_cache_salt=True,
    )
    httpd = _Server(("127.0.0.1", args.port), _WireHandler)
    httpd.behaviour = behaviour
    lifetime = threading.Timer(float(os.environ.get("FAKE_VLLM_LIFETIME_S", "120")), httpd.shutdown)
    lifetime.daemon = True
    lifetime.start()
    httpd.serve_forever(poll_interval=0.05)
    httpd.server_close()


if __name__ == "__main__":
    main()
