"""`StreamRequest.reuse_prefix` (context depth): llama.cpp is asked to reuse its cache in slot 0,
salted servers get the request's nonce as the salt as always; without it nothing changes."""

from __future__ import annotations

from precmon.servers.base import StreamRequest
from precmon.servers.protocols.llamacpp import DEPTH_SLOT, LlamaCppServer
from precmon.servers.protocols.vllm import VLLMServer


def test_llamacpp_reuses_the_cache_in_one_slot_only_when_asked():
    server = LlamaCppServer("http://127.0.0.1:1")
    plain = server.payload(StreamRequest(prompt="x", max_tokens=4))
    assert plain["cache_prompt"] is False and "id_slot" not in plain
    depth = server.payload(StreamRequest(prompt="x", max_tokens=4, reuse_prefix=True))
    assert depth["cache_prompt"] is True and depth["id_slot"] == DEPTH_SLOT == 0
    server.close()


def test_vllm_salts_a_depth_request_with_its_nonce():
    server = VLLMServer("http://127.0.0.1:1")
    p = server.payload(StreamRequest(prompt="x", max_tokens=4, nonce="abc", reuse_prefix=True))
    assert p["cache_salt"] == "abc" and "cache_prompt" not in p
    server.close()
