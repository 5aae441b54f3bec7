"""After a router-mode sweep the Server panel names the model measured last (issue 30: it named
the router's first, "tiny-F16"): the server worker probes the model it was started with, and each
probe overwrote the model that the variant's start had put on the panel."""

from __future__ import annotations

import asyncio
import json

import pytest

from precmon.servers.watch.snapshot import ServerSnapshot
from precmon.tui import server_view as sv
from precmon.tui.app import PrecmonApp
from precmon.tui.config import TuiConfig
from precmon.tui.messages import ServerProbed
from precmon.tui.widgets.server_panel import ServerPanel
from tests.tui.conftest import no_meter_factory, wait_for

URL = "http://127.0.0.1:8080"
MODELS = ("tiny-F16", "tiny-Q8_0", "tiny-Q4_K_M")


def _probe(model: str = "tiny-F16", quantization: str = "F16", models: tuple[str, ...] = MODELS) -> ServerSnapshot:
    return ServerSnapshot(URL, True, "llamacpp", "b1", model, quantization, models)


def test_a_probe_of_the_routers_first_model_keeps_the_model_measured_last():
    v = sv.server(sv.ServerView(url=URL), _probe())
    assert (v.model, v.precision) == ("tiny-F16", "F16")
    v = sv.measuring(v, "tiny-F16", "fp16")
    v = sv.measuring(sv.server(v, _probe()), "tiny-Q4_K_M", "int4")
    for _ in range(3):  # the probes during the variant and after the sweep
        v = sv.server(v, _probe())
    assert (v.model, v.precision, v.healthy) == ("tiny-Q4_K_M", "int4", True)


def test_a_probe_of_the_model_measured_updates_its_precision():
    v = sv.measuring(sv.ServerView(url=URL), "tiny-Q4_K_M", "int4")
    v = sv.server(v, _probe("tiny-Q4_K_M", "Q4_K_M"))
    assert (v.model, v.precision) == ("tiny-Q4_K_M", "Q4_K_M")


def test_a_server_that_no_longer_serves_the_model_measured_shows_what_it_serves():
    v = sv.measuring(sv.ServerView(url=URL), "tiny-Q4_K_M", "int4")
    v = sv.server(v, _probe("other", "Q8_0", ("other",)))  # another server on the port now
    assert (v.model, v.precision) == ("other", "Q8_0")


def test_a_new_server_followed_forgets_the_model_measured():
    v = sv.measuring(sv.ServerView(url=URL), "tiny-Q4_K_M", "int4")
    v = sv.server(sv.follow(URL, "sweep: next"), _probe())
    assert v.measured is None and v.model == "tiny-F16"


@pytest.mark.integration
@pytest.mark.parametrize("user_url", [True, False], ids=["--url", "no --url"])
def test_after_a_real_router_sweep_the_panel_names_the_last_model(router_server, tmp_path, user_url):
    spec = tmp_path / "sweep.toml"
    spec.write_text(
        "[defaults]\n"
        f'url = "{router_server.url}"\n'
        "output_tokens = 16\ndecode_prompt_tokens = 16\nprefill_tokens = [64]\nttft_tokens = 64\n"
        "repeats = 1\nwarmup = 0\nidle_s = 0\ncooldown_s = 0\n"
        '[[variant]]\nlabel = "F16"\nprecision = "fp16"\nmodel = "tiny-F16"\n'
        '[[variant]]\nlabel = "Q4_K_M"\nprecision = "int4"\nmodel = "tiny-Q4_K_M"\n'
    )

    async def scenario() -> tuple[str | None, int]:
        app = PrecmonApp(
            TuiConfig(
                url=router_server.url if user_url else None,
                sweep_spec=str(spec),
                out_dir=tmp_path / "out",
                discover=False,
            ),
            meter_factory=no_meter_factory,
        )
        async with app.run_test(size=(120, 40)) as pilot:
            await pilot.press("s")
            assert await wait_for(pilot, lambda: app.measuring == "sweep", 10)
            assert await wait_for(pilot, lambda: app.measuring is None, 240)
            probes = {"n": 0}
            post = app.server_worker.post

            def counted(msg):
                probes["n"] += isinstance(msg, ServerProbed)
                return post(msg)

            app.server_worker.post = counted
            app.server_worker.probe_soon()
            assert await wait_for(pilot, lambda: probes["n"] >= 2, 30)  # probes after the sweep landed
            await pilot.pause(0.2)  # and handled
            model = app.query_one("#server", ServerPanel).view.model
            app.exit(0)
        return model, probes["n"]

    model, _ = asyncio.run(scenario())
    doc = json.loads((tmp_path / "out" / "results.json").read_text())
    assert [v["status"] for v in doc["variants"]] == ["ok", "ok"]
    assert model == "tiny-Q4_K_M"
