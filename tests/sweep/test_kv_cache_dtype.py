"""Sweep key `kv_cache_dtype`: validated, checked against the launch argv when the file is read,
and checked against what the server itself reports (vLLM's cache_config_info, llama-server's log)."""

from __future__ import annotations

import pytest

from precmon.sweep.argv_flags import kv_check, kv_from_log, launched_kv
from precmon.sweep.spec import SpecError, parse_spec

LLAMA = "/opt/llama/bin/llama-server"


def sweep(kv: str, launch: list[str] | None = None) -> str:
    text = f'[[variant]]\nlabel = "KV"\nprecision = "int4"\nurl = "http://127.0.0.1:8080"\nkv_cache_dtype = "{kv}"\n'
    if launch is not None:
        text += "launch = [" + ", ".join(f'"{a}"' for a in launch) + "]\n"
    return text


def test_declared_kv_type_is_kept_on_the_variant():
    (v,) = parse_spec(sweep("q8_0", [LLAMA, "-m", "m.gguf", "-ctk", "q8_0", "-ctv", "q8_0", "-fa", "on"])).variants
    assert v.kv_cache_dtype == "q8_0"
    (v,) = parse_spec(sweep("fp8")).variants  # not launched: nothing to check it against yet
    assert v.kv_cache_dtype == "fp8"


def test_a_bad_value_names_the_line_and_key():
    with pytest.raises(SpecError, match=r"<sweep>:5: variant #1 key 'kv_cache_dtype': expected a KV cache type"):
        parse_spec(sweep("q8 0; rm"))


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        ([LLAMA, "-ctk", "q8_0"], "K q8_0, V f16"),  # -ctv left at llama-server's default
        ([LLAMA, "-m", "m.gguf"], "K f16, V f16"),
        (["vllm", "serve", "m", "--kv-cache-dtype", "fp8"], "K fp8, V fp8"),
    ],
)
def test_a_launch_argv_that_contradicts_the_declaration_is_refused(argv, says):
    with pytest.raises(SpecError) as exc:
        parse_spec(sweep("q8_0", argv))
    msg = str(exc.value)
    assert msg.startswith("<sweep>:5: variant #1 key 'kv_cache_dtype': 'KV' declares q8_0") and says in msg


def test_launched_kv_reads_both_spellings():
    assert launched_kv([LLAMA, "--cache-type-k=q4_0", "--cache-type-v", "q4_0"]) == {"k": "q4_0", "v": "q4_0"}
    assert launched_kv(["python", "-m", "sglang.launch_server"]) is None  # default unknown here


def test_kv_types_from_llama_servers_log(tmp_path):
    log = tmp_path / "s.log"
    log.write_text(
        "0.00.118.422 I llama_kv_cache: size =    8.50 MiB (  1024 cells,   8 layers,  1/1 seqs), "
        "K (q8_0):    4.25 MiB, V (q8_0):    4.25 MiB\n"
    )
    assert kv_from_log(log) == {"k": "q8_0", "v": "q8_0", "kv_bytes_per_token": 8704}  # 8.5 MiB / 1024 cells
    assert kv_from_log(tmp_path / "none.log") is None
    assert kv_check("Q8", "q8_0", {}, log) == ({**kv_from_log(log), "from": "the server's log (llama_kv_cache)"}, None)
    _, warning = kv_check("F16", "f16", {}, log)
    assert warning is not None and warning.endswith("says K q8_0, V q8_0")


def test_kv_check_warns_naming_the_variant_when_the_server_disagrees():
    back, warning = kv_check("FP8-KV", "fp8", {"kv_cache_dtype": "auto"}, None)
    assert back == {"k": "auto", "v": "auto", "from": "server.flags (vllm:cache_config_info)"}
    assert warning == (
        "kv-cache-mismatch: variant 'FP8-KV' declares kv_cache_dtype fp8, server.flags (vllm:cache_config_info) "
        "says K auto, V auto"
    )
    back, warning = kv_check("FP8-KV", "fp8", {"kv_cache_dtype": "fp8"}, None)
    assert warning is None and back == {"k": "fp8", "v": "fp8", "from": "server.flags (vllm:cache_config_info)"}
    assert kv_check("X", "f16", {}, None) == (None, None)  # nothing read back: no claim
