"""variant.server.flags: llama.cpp `/props` and vLLM `/metrics` cache_config_info, read untrusted."""

from __future__ import annotations

from precmon.measure.bench import Bench, BenchSettings
from precmon.servers.base import ReportsFlags
from precmon.servers.protocols.llamacpp import LlamaCppServer
from precmon.servers.protocols.vllm import VLLMServer
from tests.fakes.timed_server import TimedServer
from tests.fakes.wire_servers import Scripted, ScriptedServer

PROPS = {
    "build_info": "b6500-abc",
    "total_slots": 4,
    "model_ftype": "Q8_0",
    "endpoint_metrics": False,
    "default_generation_settings": {"n_ctx": 2048, "params": {}},
}


def test_llamacpp_flags_from_props():
    with ScriptedServer({"/props": Scripted(body=PROPS), "/models": Scripted(404)}) as srv:
        server = LlamaCppServer(srv.url)
        assert isinstance(server, ReportsFlags) and server.flags_source == "/props"
        assert server.server_flags(None) == {
            "build": "b6500-abc",
            "n_ctx": 2048,
            "total_slots": 4,
            "model_ftype": "Q8_0",
            "endpoint_metrics": False,
        }


def test_llamacpp_flags_of_the_wrong_type_are_left_out_and_no_props_is_no_flags():
    bad = {
        "build_info": ["x"],
        "total_slots": "many",
        "model_ftype": 7,
        "endpoint_metrics": "yes",
        "default_generation_settings": {"n_ctx": -1},
    }
    with ScriptedServer({"/props": Scripted(body=bad), "/models": Scripted(404)}) as srv:
        assert LlamaCppServer(srv.url).server_flags(None) == {}
    with ScriptedServer({"/models": Scripted(404)}) as srv:
        assert LlamaCppServer(srv.url).server_flags(None) == {}


CACHE_INFO = (
    b"# HELP vllm:cache_config_info Information of the LLMEngine CacheConfig\n"
    b'vllm:cache_config_info{block_size="16",cache_dtype="fp8_e4m3",enable_prefix_caching="True",'
    b'gpu_memory_utilization="0.9",num_gpu_blocks="NaN",swap_space="4"} 1.0\n'
)


def test_vllm_flags_from_cache_config_info():
    with ScriptedServer({"/metrics": Scripted(body=CACHE_INFO, content_type="text/plain")}) as srv:
        assert VLLMServer(srv.url).server_flags(None) == {
            "kv_cache_dtype": "fp8_e4m3",
            "prefix_caching": True,
            "block_size": 16,
            "gpu_memory_utilization": 0.9,
        }
    with ScriptedServer({"/metrics": Scripted(500, b"no")}) as srv:
        assert VLLMServer(srv.url).server_flags(None) == {}


def test_vllm_num_gpu_blocks_once_the_engine_has_sized_its_cache():
    """num_gpu_blocks × block_size is the KV capacity of a server precmon did not launch."""
    sized = CACHE_INFO.replace(b'num_gpu_blocks="NaN"', b'num_gpu_blocks="16384"')
    with ScriptedServer({"/metrics": Scripted(body=sized, content_type="text/plain")}) as srv:
        flags = VLLMServer(srv.url).server_flags(None)
    assert flags["num_gpu_blocks"] == 16384 and flags["block_size"] == 16


def test_bench_records_the_flags_in_variant_server():
    with TimedServer() as srv:
        server = LlamaCppServer(srv.url)
        s = BenchSettings(
            output_tokens=4,
            decode_prompt_tokens=8,
            prefill_tokens=[16],
            ttft_tokens=None,
            repeats=1,
            warmup=0,
            idle_s=0,
        )
        res = Bench(server, s).run()
        server.close()
    assert res.server.flags["build"] == "fake-1" and res.server.flags["n_ctx"] == 4096
    assert res.server.flags_from == "/props"
