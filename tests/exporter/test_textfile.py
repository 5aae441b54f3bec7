"""`--textfile` is replaced atomically: a reader polling while it is rewritten never sees a part."""

from __future__ import annotations

import threading
import time

from prometheus_client.parser import text_string_to_metric_families

from precmon.exporter.textfile import write_atomic
from tests.exporter.conftest import SPBM, write_sysfs
from tests.exporter.full import full_exporter, wait_complete
from tests.fakes.wire_servers import WireBehaviour, WireServer

REWRITES = 300


def test_reader_never_sees_a_partial_textfile(tmp_path) -> None:
    with WireServer(WireBehaviour(kind="vllm", model="tiny-vllm")) as srv:
        exp, sampler = full_exporter(tmp_path, srv.url)
        try:
            last_family = wait_complete(exp).rstrip("\n").rsplit("\n# HELP ", 1)[-1].split()[0]
            path = tmp_path / "precmon.prom"
            exp.write_textfile(path)
            stop, reads, bad = threading.Event(), [0], []

            def reader() -> None:
                while not stop.is_set() and not bad:
                    text = path.read_text()
                    reads[0] += 1
                    try:
                        names = [f.name for f in text_string_to_metric_families(text)]
                    except ValueError as exc:
                        bad.append(f"unparsable: {exc}")
                        continue
                    if not text.endswith("\n") or names[-1] != last_family:
                        bad.append(f"cut short: {text[-80:]!r}")

            t = threading.Thread(target=reader)
            t.start()
            for _ in range(REWRITES):
                exp.write_textfile(path)
            stop.set()
            t.join(10)
        finally:
            exp.stop()
            sampler.stop()
    assert not bad, bad[0]
    assert reads[0] > 10  # the reader really raced the writer
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []  # no temp file left


def test_a_plain_rewrite_would_be_seen_half_written(tmp_path) -> None:
    """The check above can fail: writing in place, a reader catches an empty or partial file."""
    path, data = tmp_path / "x.prom", b"# HELP a b\n" * 20000
    path.write_bytes(data)
    stop, partial = threading.Event(), []

    def reader() -> None:
        while not stop.is_set() and not partial:
            if len(path.read_bytes()) != len(data):
                partial.append(True)

    t = threading.Thread(target=reader)
    t.start()
    for _ in range(REWRITES):
        with path.open("wb") as f:
            f.write(data[: len(data) // 2])
            f.flush()
            f.write(data[len(data) // 2 :])
        if partial:
            break
    stop.set()
    t.join(10)
    assert partial
    write_atomic(path, b"ok\n")
    assert path.read_bytes() == b"ok\n" and path.stat().st_mode & 0o777 == 0o644


def test_cli_textfile_alone_writes_the_metrics_and_serves_no_http(tmp_path, exporter_proc) -> None:
    sysfs = write_sysfs(tmp_path / "root", {"hwmon3": SPBM})
    path = tmp_path / "precmon.prom"
    exp = exporter_proc(["--textfile", str(path), "--interval-s", "0.2"], sysfs)
    deadline, text = time.monotonic() + 20, ""
    while time.monotonic() < deadline and 'source="hwmon3:sys_total"' not in text:
        time.sleep(0.1)
        text = path.read_text() if path.exists() else ""
    (watts,) = [
        s
        for f in text_string_to_metric_families(text)
        for s in f.samples
        if s.name == "precmon_power_watts" and s.labels["source"] == "hwmon3:sys_total"
    ]
    assert watts.value == 38.2
    code, err = exp.stop()
    assert code == 130 and "Traceback" not in err, err
    assert "serving http" not in err and f"writing {path}" in err
