"""#15: started without --url, the Server panel follows the server the sweep measures: each
variant's own URL (or the one it launched), not "no server — pass --url" the whole sweep."""

from __future__ import annotations

import asyncio
import time

from precmon.core.schema import to_json
from precmon.tui.app import PrecmonApp
from precmon.tui.config import TuiConfig
from precmon.tui.live import RUNNING
from precmon.tui.messages import ServerProbed
from precmon.tui.widgets.server_panel import ServerPanel
from precmon.tui.workers.background import Quitting
from precmon.tui.workers.power_worker import PowerWorker
from precmon.tui.workers.server_worker import ServerConfig, ServerWorker
from tests.fakes.timed_server import Behaviour, TimedServer
from tests.tui.conftest import no_meter_factory, wait_for

SLOW = Behaviour(itl_s=0.02, prefill_s_per_token=0.0001)  # a few seconds per variant: time to probe


def _spec(tmp_path, url1: str, url2: str):
    spec = tmp_path / "sweep.toml"
    spec.write_text(
        "[defaults]\ncooldown_s = 0\nidle_s = 0\nwarmup = 0\nrepeats = 3\noutput_tokens = 48\n"
        "decode_prompt_tokens = 16\nprefill_tokens = [32]\nttft_tokens = 32\n"
        f'[[variant]]\nlabel = "one"\nprecision = "int4"\nurl = "{url1}"\nmodel = "model-one"\n'
        f'[[variant]]\nlabel = "two"\nprecision = "int8"\nurl = "{url2}"\nmodel = "model-two"\n'
    )
    return spec


def test_the_server_panel_follows_each_variants_server(tmp_path):
    async def scenario():
        seen: list[tuple[str, str | None, str | None, bool | None]] = []
        with TimedServer(SLOW) as srv1, TimedServer(SLOW) as srv2:
            app = PrecmonApp(
                TuiConfig(sweep_spec=str(_spec(tmp_path, srv1.url, srv2.url)), out_dir=tmp_path / "out"),
                meter_factory=no_meter_factory,
            )
            async with app.run_test(size=(120, 40)) as pilot:

                def sample() -> bool:
                    running = [v["label"] for v in to_json(app.live.doc)["variants"] if v.get("status") == RUNNING]
                    v = app.query_one("#server", ServerPanel).view
                    if running:
                        seen.append((running[0], v.url, v.kind, v.healthy))
                    return False

                await pilot.press("s")
                assert await wait_for(pilot, lambda: app.measuring == "sweep", 10)
                await wait_for(pilot, lambda: sample() or app.measuring is None, 60)
                app.exit(0)
        return seen, (srv1.url, srv2.url)

    seen, (url1, url2) = asyncio.run(scenario())
    for label, url in (("one", url1), ("two", url2)):
        mine = [s for s in seen if s[0] == label]
        assert mine, f"variant {label} never seen running"
        # the panel names this variant's server, probed healthy with its kind, while it runs
        assert (label, url, "llamacpp", True) in mine, mine[-5:]
        assert all(s[1] in (None, url) for s in mine[len(mine) // 2 :]), mine  # not the other server


def test_follow_retargets_the_watch_and_drops_the_old_servers_facts():
    posted: list[object] = []
    quitting = Quitting()
    power = PowerWorker(posted.append, quitting, no_meter_factory)
    with TimedServer() as srv1, TimedServer() as srv2:
        worker = ServerWorker(posted.append, quitting, power, ServerConfig())
        worker.follow(srv1.url, "model-one")

        def probed(url: str) -> bool:
            return any(
                isinstance(m, ServerProbed) and m.snapshot.url == url and m.snapshot.healthy for m in list(posted)
            )

        assert _until(lambda: probed(srv1.url), 10)
        assert worker.config.url == srv1.url and worker.metrics_model == "model-one"
        worker.follow(srv2.url, "model-two")
        assert _until(lambda: probed(srv2.url), 10)
        assert worker.config.url == srv2.url and worker.metrics_model == "model-two"
        cut = max(i for i, m in enumerate(posted) if isinstance(m, ServerProbed) and m.snapshot.url == srv2.url)
        tail = [m.snapshot.url for m in posted[cut:] if isinstance(m, ServerProbed)]
        assert set(tail) == {srv2.url}  # nothing of server 1 after the switch
        quitting.set()
        quitting.join(5.0)


def _until(cond, timeout_s: float) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if cond():
            return True
        time.sleep(0.05)
    return cond()


def test_a_run_landing_makes_the_worker_look_again_at_once():
    # a launched server is down when its variant starts; the run that lands says it is up now
    import threading as _threading

    from tests.fakes.timed_server import _Handler, _Server

    posted: list[object] = []
    quitting = Quitting()
    power = PowerWorker(posted.append, quitting, no_meter_factory)
    gone = TimedServer()
    url, port = gone.url, int(gone.url.rsplit(":", 1)[1])
    gone._httpd.server_close()  # nothing listens there yet
    worker = ServerWorker(posted.append, quitting, power, ServerConfig())
    worker.follow(url, None)

    def probed(healthy: bool) -> bool:
        return any(isinstance(m, ServerProbed) and m.snapshot.healthy is healthy for m in list(posted))

    try:
        assert _until(lambda: probed(False), 10)
        httpd = _Server(("127.0.0.1", port), _Handler)
        httpd.behaviour = Behaviour()
        _threading.Thread(target=httpd.serve_forever, daemon=True).start()
        worker.probe_soon()
        t0 = time.monotonic()
        assert _until(lambda: probed(True), 10)
        assert time.monotonic() - t0 < 2.5  # the next tick (1 s), not the next health round (4 s)
    finally:
        quitting.set()
        quitting.join(5.0)
        if "httpd" in locals():
            httpd.shutdown()
            httpd.server_close()
