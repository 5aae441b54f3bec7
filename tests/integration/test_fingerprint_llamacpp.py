"""The environment fingerprint and server flags against the real llama-server test bed: the
`/props` keys precmon reads are the ones this build really returns."""

from __future__ import annotations

import pytest

from precmon.measure.bench import Bench, BenchSettings
from precmon.measure.results import host_info, results_document
from precmon.servers.detect import make_server

pytestmark = pytest.mark.integration

QUICK = BenchSettings(
    output_tokens=8, decode_prompt_tokens=16, prefill_tokens=[64], ttft_tokens=None, repeats=1, warmup=0, idle_s=0
)


def test_router_variant_records_build_and_flags_from_props(router_server):
    server = make_server(router_server.url)
    try:
        res = Bench(server, QUICK, model="tiny-Q8_0").run()
    finally:
        server.close()
    assert res.status == "ok", res.errors
    flags = res.server.flags
    assert flags is not None and res.server.flags_from == "/props"
    assert flags["n_ctx"] == 2048  # the fixture's --ctx-size (per slot)
    assert isinstance(flags["build"], str) and flags["build"] == res.server.version
    assert isinstance(flags.get("total_slots"), int) and flags["total_slots"] >= 1
    assert flags.get("model_ftype") == "Q8_0"
    doc = results_document([res], QUICK.to_dict(), host=host_info())
    fp = doc.host.fingerprint
    assert len(fp["id"]) == 12 and "hostname" in fp["id_from"]
