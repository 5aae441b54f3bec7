"""Bad files a user hands precmon: results files for `report`/`compare`/`--resume` and sweep
files for `sweep`. Each maker writes one into a folder and returns its path; the good ones are
small but complete, so a fault is the only thing wrong with the bad ones."""

from __future__ import annotations

import copy
import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.hostile.servers import MARKUP_BODY

GOOD_RESULTS: dict[str, Any] = {
    "schema": "precmon.results/1",
    "created": "2026-01-01T00:00:00Z",
    "precmon_version": "0.1.0",
    "host": {"hostname": "h", "platform": "Linux", "cpu_count": 2, "gpus": [], "power_sources": []},
    "settings": {"output_tokens": 4, "repeats": 1},
    "variants": [
        {
            "label": "Q4_K_M",
            "precision": "int4",
            "model": "m-Q4_K_M",
            "server": {"kind": "llamacpp", "url": "http://127.0.0.1:8080"},
            "status": "ok",
            "errors": [],
            "metrics": {
                "decode_tok_s": 100.0,
                "itl_ms_p50": 10.0,
                "itl_ms_p99": 12.0,
                "prefill_ms_per_token": {"16": 0.5},
                "ttft_s": {"16": 0.01},
                "power_idle_w": None,
                "power_decode_w": None,
                "power_prefill_w": None,
                "energy_decode_j_per_token": None,
                "memory_gb": None,
                "server_decode_tok_s": None,
                "server_prefill_ms_per_token": {},
            },
            "runs": [{"phase": "decode", "prompt_tokens": 9, "output_tokens": 4, "decode_tok_s": 100.0, "ok": True}],
        }
    ],
}


def _doc(change: Callable[[dict[str, Any]], None]) -> str:
    doc = copy.deepcopy(GOOD_RESULTS)
    change(doc)
    return json.dumps(doc)


def _set(path: str, value: Any) -> Callable[[dict[str, Any]], None]:
    """`variants.0.metrics.decode_tok_s` = value."""

    def change(doc: dict[str, Any]) -> None:
        *parents, last = path.split(".")
        node: Any = doc
        for p in parents:
            node = node[int(p)] if isinstance(node, list) else node[p]
        if isinstance(node, list):
            node[int(last)] = value
        else:
            node[last] = value

    return change


def write_good_results(folder: Path, name: str = "good.json") -> Path:
    path = folder / name
    path.write_text(json.dumps(GOOD_RESULTS))
    return path


def _text(content: str | bytes) -> Callable[[Path], Path]:
    def make(folder: Path) -> Path:
        path = folder / "bad.json"
        path.write_bytes(content.encode() if isinstance(content, str) else content)
        return path

    return make


def _folder(folder: Path) -> Path:
    (folder / "bad.json").mkdir()
    return folder / "bad.json"


def _link_to(target: str) -> Callable[[Path], Path]:
    def make(folder: Path) -> Path:
        path = folder / "bad.json"
        if target == "loop":
            os.symlink(folder / "other.json", path)
            os.symlink(path, folder / "other.json")
        elif target == "folder":
            (folder / "sub").mkdir()
            os.symlink(folder / "sub", path)
        else:
            os.symlink(folder / "missing.json", path)
        return path

    return make


_NAN = json.dumps(GOOD_RESULTS).replace('"decode_tok_s": 100.0, "itl', '"decode_tok_s": NaN, "itl')
DEEP = 100_000

# name -> maker; every one of these is a user error: `report` and `compare` exit 2 naming the file.
BAD_RESULTS: dict[str, Callable[[Path], Path]] = {
    "folder": _folder,
    "empty": _text(""),
    "not_json": _text("{not json"),
    "non_utf8": _text(b'{"schema": "precmon.results/1", "label": "\xff\xfe"}'),
    "not_an_object": _text("[1, 2, 3]"),
    "wrong_schema": _text(_doc(_set("schema", "other/9"))),
    "settings_a_string": _text(_doc(_set("settings", "fast"))),
    "host_a_list": _text(_doc(_set("host", [1, 2]))),
    "precision_a_number": _text(_doc(_set("variants.0.precision", 5))),
    "variants_an_object": _text(_doc(_set("variants", {"a": 1}))),
    "metrics_a_list": _text(_doc(_set("variants.0.metrics", [1]))),
    "deep_nesting": _text('{"schema": "precmon.results/1", "variants": ' + "[" * DEEP + "]" * DEEP + "}"),
    "nan": _text(_NAN),
    "negative_prefill": _text(_doc(_set("variants.0.metrics.prefill_ms_per_token", {"16": -0.5}))),
    "huge_value": _text(_doc(_set("variants.0.metrics.decode_tok_s", 1e308))),
    "dangling_link": _link_to("missing"),
    "link_to_folder": _link_to("folder"),
    "link_loop": _link_to("loop"),
}

# Odd but valid: shown as typed, escaped (exit 0).
ODD_RESULTS: dict[str, Callable[[Path], Path]] = {
    "markup_label": _text(_doc(_set("variants.0.label", "F16 [/] [imatrix] \x1b[2J"))),
    "markup_error": _text(_doc(_set("variants.0.errors", [MARKUP_BODY, "<script>alert(1)</script>"]))),
}

SPEC_HEAD = """
[defaults]
output_tokens = 4
decode_prompt_tokens = 8
prefill_tokens = [16]
ttft_tokens = 16
repeats = 1
warmup = 0
idle_s = 0
cooldown_s = 0
timeout_s = 1
server = "llamacpp"
"""


def variant(label: str, url: str, precision: str = "int4", **extra: Any) -> str:
    lines = [f"label = {json.dumps(label)}", f'precision = "{precision}"', f'url = "{url}"']
    lines += [f"{k} = {json.dumps(v)}" for k, v in extra.items()]
    return "\n[[variant]]\n" + "\n".join(lines) + "\n"


def _spec(body: str | bytes) -> Callable[[Path], Path]:
    def make(folder: Path) -> Path:
        path = folder / "sweep.toml"
        path.write_bytes(body.encode() if isinstance(body, str) else body)
        return path

    return make


def _spec_folder(folder: Path) -> Path:
    (folder / "sweep.toml").mkdir()
    return folder / "sweep.toml"


_URL = "http://127.0.0.1:9"
# name -> (maker, the line's key or word the message must name); exit 2 each.
BAD_SPECS: dict[str, tuple[Callable[[Path], Path], str]] = {
    "folder": (_spec_folder, "sweep.toml"),
    "non_utf8": (_spec(SPEC_HEAD.encode() + b'\n[[variant]]\nlabel = "\xff"\n'), "sweep.toml"),
    "not_toml": (_spec("[defaults\nx = "), "sweep.toml"),
    "repeats_a_string": (_spec(SPEC_HEAD.replace("repeats = 1", 'repeats = "x"') + variant("A", _URL)), "repeats"),
    "timeout_nan": (_spec(SPEC_HEAD.replace("timeout_s = 1", "timeout_s = nan") + variant("A", _URL)), "timeout_s"),
    "timeout_inf": (_spec(SPEC_HEAD.replace("timeout_s = 1", "timeout_s = inf") + variant("A", _URL)), "timeout_s"),
    "timeout_zero": (_spec(SPEC_HEAD.replace("timeout_s = 1", "timeout_s = 0") + variant("A", _URL)), "timeout_s"),
    "output_tokens_1": (
        _spec(SPEC_HEAD.replace("output_tokens = 4", "output_tokens = 1") + variant("A", _URL)),
        "output_tokens",
    ),
    "bad_url": (_spec(SPEC_HEAD + variant("A", "http://[bad")), "url"),
    "deep_nesting": (_spec(SPEC_HEAD + "x = " + "[" * 5000 + "]" * 5000 + "\n" + variant("A", _URL)), "sweep.toml"),
}

ODD_SPEC = SPEC_HEAD + variant("F16 [/] \x1b]0;pwned\x07", _URL) + variant("Q4_K_M [imatrix]", _URL)
