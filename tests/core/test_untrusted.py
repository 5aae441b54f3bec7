"""Untrusted text: escapes removed, controls visible, markup escaped, secrets redacted."""

from rich.text import Text

from precmon.untrusted import markup, redact, redact_argv, redact_url, visible


def test_visible_strips_ansi_and_osc():
    assert visible("a\x1b[31mred\x1b[0m b") == "ared b"
    assert visible("\x1b]0;pwned\x07title") == "title"
    assert visible("\x1b]8;;http://x\x1b\\link") == "link"


def test_visible_shows_controls_and_newlines():
    assert visible("bell\x07") == "bell\u2407"
    assert visible("a\nb") == "a\u23ceb"
    assert visible("a\nb", one_line=False) == "a\nb"
    assert visible("x\x9b31my") == "xy"
    assert visible("x\x85y") == "x\\x85y"


def test_visible_shows_bidi_controls():
    # U+202E (right-to-left override) reached the terminal raw: a label "Q4\u202e" turned the rest
    # of its line around in a bidi terminal, the HTML report and a browser (Trojan Source)
    for ch in "\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u200e\u200f\u061c":
        assert visible(f"a{ch}b") == f"a\\u{ord(ch):04x}b"
    assert visible("ünï 量化 🚀") == "ünï 量化 🚀"  # other non-ASCII text is kept as typed


def test_visible_limit():
    assert visible("abcdef", limit=4) == "abc\u2026"


def test_markup_round_trips_through_rich():
    for label in ("F16 [/]", "Q4_K_M [imatrix]", "[bold]x[/bold]", "[link=http://x]y"):
        assert Text.from_markup(markup(label)).plain == label
        assert Text.from_markup(f"[b]{markup(label)}[/b]").plain == label
    for odd in ("a\\[b", "x\\", "[/]\\", "\\[bold]x"):  # backslashes: never a tag, never an error
        text = Text.from_markup(f"[b]{markup(odd)}[/b]")
        assert [str(span.style) for span in text.spans] == ["bold"]


def test_redact_url_and_headers():
    assert redact_url("http://user:pass@127.0.0.1:8080/v1") == "http://***@127.0.0.1:8080/v1"
    body = '{"error": "bad header Authorization: Bearer sk-abcdefghijklmnop"}'
    assert "sk-abc" not in redact(body)
    assert "abcdefghijkl" not in redact("authorization=Basic dXNlcjpwYXNz")
    assert redact("key hf_ABCDEFGHIJKLMNOP here") == "key *** here"
    assert "s3cret" not in redact("GET /v1?api_key=s3cret&x=1")
    assert redact("plain text [/] stays") == "plain text [/] stays"


def test_redact_argv():
    argv = ["vllm", "serve", "m", "--api-key", "sk-live-123456789", "--token=abc", "--port", "8001"]
    assert redact_argv(argv) == ["vllm", "serve", "m", "--api-key", "***", "--token=***", "--port", "8001"]
