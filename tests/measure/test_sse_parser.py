from precmon.servers.wire.sse import SSEParser


def events(chunks: list[bytes]) -> list[str]:
    p = SSEParser()
    out = []
    for c in chunks:
        out += [e.data for e in p.feed(c)]
    out += [e.data for e in p.flush()]
    return out


def test_basic_events_and_done():
    assert events([b'data: {"a":1}\n\ndata: [DONE]\n\n']) == ['{"a":1}', "[DONE]"]


def test_lines_split_across_reads_byte_by_byte():
    raw = b'data: {"x": "hello"}\n\ndata: {"y": 2}\n\n'
    assert events([raw[i : i + 1] for i in range(len(raw))]) == ['{"x": "hello"}', '{"y": 2}']


def test_crlf_and_lone_cr_line_endings():
    assert events([b"data: a\r\n\r\ndata: b\r\r"]) == ["a", "b"]


def test_crlf_split_between_cr_and_lf():
    assert events([b"data: a\r", b"\n\r", b"\ndata: b\r\n\r\n"]) == ["a", "b"]


def test_comments_and_pings_are_not_events():
    p = SSEParser()
    got = [e.data for e in p.feed(b": ping\n\ndata: x\n\n:keepalive\n\n")]
    assert got == ["x"]
    assert p.comments == 2


def test_multiline_data_is_joined_with_newline():
    assert events([b"data: one\ndata: two\n\n"]) == ["one\ntwo"]


def test_event_field_and_no_space_after_colon():
    p = SSEParser()
    (ev,) = p.feed(b'event: message\ndata:{"k":1}\n\n')
    assert ev.event == "message" and ev.data == '{"k":1}'


def test_final_event_without_blank_line_is_flushed():
    assert events([b"data: [DONE]"]) == ["[DONE]"]


def test_utf8_split_inside_a_character():
    raw = 'data: "한국어"\n\n'.encode()
    assert events([raw[:9], raw[9:]]) == ['"한국어"']


def test_utf8_bom_at_stream_start_is_skipped():
    assert events(["\ufeffdata: a\n\n".encode()]) == ["a"]
