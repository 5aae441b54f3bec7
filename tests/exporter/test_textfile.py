"""`--textfile` is replaced atomically: a reader polling while it is rewritten never sees a part."""

from __future__ import annotations

import threading

from prometheus_client.parser import text_string_to_metric_families

from precmon.exporter.textfile import write_atomic
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
