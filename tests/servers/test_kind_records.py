"""The kind records (servers/kinds.py) hold only values their readers understand, and a kind
precmon does not know can do nothing."""

from __future__ import annotations

from precmon.servers import kinds


def test_each_record_says_what_it_can_do_in_words_its_readers_know():
    for k in kinds.KINDS:
        assert k.quality in (None, *kinds.QUALITY_METHODS), k.name
        assert k.quality is not None or k.no_quality, k.name
        assert k.live_rate in (None, kinds.LIVE_METRICS, kinds.LIVE_SLOTS), k.name
        assert k.live_rate is not None or k.no_live_rate, k.name
        reader = k.log_reader_fn()
        assert (reader is None) == (k.log_reader is None), k.name
        assert reader is None or (callable(reader) and k.log_not_launched), k.name
        assert k.cache_block_tokens >= 1, k.name


def test_a_kind_precmon_does_not_know_can_do_nothing():
    for name in (None, "", "koboldcpp"):
        r = kinds.capabilities(name)
        assert r.quality is None and r.no_quality == "not researched yet"
        assert r.log_reader_fn() is None and r.live_rate is None and not r.gauges.running
        assert not r.metrics_by_model and r.prefix_block_tokens({"block_size": 16}) == 1
    assert kinds.capabilities("koboldcpp").display == "koboldcpp"


def test_the_block_rule_believes_only_a_sane_reported_size():
    vllm = kinds.capabilities("vllm")
    assert vllm.prefix_block_tokens({}) == 128
    assert vllm.prefix_block_tokens({"block_size": 16}) == 16
    for bad in (True, 0, -16, 8192, "16", 16.0):
        assert vllm.prefix_block_tokens({"block_size": bad}) == 128, bad
    assert kinds.capabilities("llamacpp").prefix_block_tokens({"block_size": 16}) == 1


def test_the_demo_engines_are_llama_cpp_first():
    assert kinds.DEMO_ENGINES == ("llamacpp", "vllm")
