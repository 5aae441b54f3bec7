import pytest

from precmon.core.stats import median, percentile
from precmon.measure.prompts import PromptBuilder
from precmon.measure.timing import gaps_ms


def test_median_and_percentiles():
    assert median([3.0, 1.0, 2.0]) == 2.0
    assert median([1.0, 2.0, 3.0, 4.0]) == 2.5
    assert median([None, 5.0]) == 5.0
    assert median([]) is None
    assert percentile([1.0, 2.0, 3.0, 4.0, 5.0], 99) == pytest.approx(4.96)
    assert percentile([10.0], 99) == 10.0


def test_gaps_ms():
    assert gaps_ms([1.0, 1.002, 1.005]) == pytest.approx([2.0, 3.0])


def word_counter(text: str) -> int:
    return len(text.split()) + 1  # BOS + one token per word


def test_prompt_hits_exact_token_count_with_tokenizer():
    b = PromptBuilder(word_counter)
    for n in (3, 17, 128, 4096):
        p = b.build(n)
        assert p.expected_tokens == n
        assert word_counter(p.text) == n


def test_every_prompt_starts_with_a_fresh_nonce():
    b = PromptBuilder(word_counter)
    a, c = b.build(64), b.build(64)
    assert a.nonce != c.nonce
    assert a.text.split()[0] != c.text.split()[0]
    assert a.text.startswith(f"[{a.nonce}]")


def test_prompt_with_merging_tokenizer_uses_padding():
    # A tokenizer that counts two characters per token: word boundaries alone cannot hit every count.
    def chars(text: str) -> int:
        return 1 + (len(text) + 1) // 2

    b = PromptBuilder(chars)
    for n in (50, 51, 300):
        p = b.build(n)
        assert chars(p.text) == n


def test_prompt_without_tokenizer_is_estimated_and_calibrated():
    b = PromptBuilder(None, tokens_per_word=1.0)
    p = b.build(200)
    assert p.expected_tokens is None
    n_words = len(p.text.split()) - 1
    assert 180 <= n_words <= 200
    b.calibrate(n_words, n_words * 2)
    assert b.tokens_per_word == 2.0


def test_a_tokenizer_that_stops_counting_is_an_error_not_a_hang():
    from precmon.measure.prompts import PromptError

    b = PromptBuilder(lambda t: min(len(t.split()) + 1, 4096))
    with pytest.raises(PromptError, match="cannot build a 5000-token prompt"):
        b.build(5000)


def test_a_repeated_size_costs_a_few_tokenizer_requests_not_a_bisection():
    """The bench builds every prompt of a size afresh (a new nonce each time): each tokenizer
    request is a round trip to the server while it is measured, so the search steps from the
    last fit instead of bisecting again (bisection: 12-18 requests a prompt with this tokenizer,
    ~7 on llama-server; stepping: 2-5 here, 1-3 on llama-server)."""
    calls = []

    def counted(text: str) -> int:
        calls.append(text)
        return 1 + (len(text) + 1) // 2  # two characters a token: the nonce moves the count

    b = PromptBuilder(counted)
    b.build(512)
    used = []
    for _ in range(10):
        calls.clear()
        p = b.build(512)
        used.append(len(calls))
        assert counted(p.text) == 512
    assert max(used) <= 6 and sum(used) <= 40, f"tokenizer requests per prompt: {used}"
