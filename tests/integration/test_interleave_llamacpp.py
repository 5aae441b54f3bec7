"""An interleaved sweep over the real llama-server router: models alternate request by request,
each switch is made before the measured request, and every variant is measured in full."""

from __future__ import annotations

import json

import pytest

from precmon.sweep.runner import SweepRunner
from precmon.sweep.spec import parse_spec

pytestmark = pytest.mark.integration

TEXT = """\
[defaults]
url = "{url}"
order = "interleaved"
output_tokens = 16
decode_prompt_tokens = 16
prefill_tokens = [128]
ttft_tokens = 256
repeats = 2
warmup = 1
idle_s = 0
cooldown_s = 0

[[variant]]
label = "F16"
precision = "fp16"
model = "tiny-F16"

[[variant]]
label = "Q4_K_M"
precision = "int4"
model = "tiny-Q4_K_M"
"""


def test_router_sweep_interleaved(router_server, tmp_path):
    path = SweepRunner(parse_spec(TEXT.format(url=router_server.url)), tmp_path).run()
    doc = json.loads(path.read_text())
    assert doc["settings"]["order"] == "interleaved"
    assert [v["status"] for v in doc["variants"]] == ["ok", "ok"], [v["errors"] for v in doc["variants"]]
    runs = sorted(
        ((r["extra"]["order_index"], v["label"], r["phase"]) for v in doc["variants"] for r in v["runs"]),
    )
    assert [label for _, label, _ in runs] == ["F16", "Q4_K_M"] * 7
    assert [phase for _, _, phase in runs][::2] == ["warmup", "decode", "decode", "prefill", "prefill", "ttft", "ttft"]
    for v in doc["variants"]:
        assert v["metrics"]["decode_tok_s"] > 0
        assert all(r["ok"] for r in v["runs"])
        assert v["server"]["flags"]["n_ctx"] == 2048
