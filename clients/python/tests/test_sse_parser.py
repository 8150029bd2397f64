"""SSE parsing rules (no server needed)."""

import unittest

try:
    from . import _support  # run as the package tests (-t clients/python)
except ImportError:
    import _support  # noqa: F401  (run with -s clients/python/tests; puts the client on sys.path)

from canvas_client import Event, SSEParser


def parse_all(data, chunk=None, last_event_id=None):
    p = SSEParser(last_event_id)
    out = []
    if chunk is None:
        out.extend(p.feed(data))
    else:
        for i in range(0, len(data), chunk):
            out.extend(p.feed(data[i:i + chunk]))
    return p, out


class SSEParserTest(unittest.TestCase):
    def test_commit_event_with_json_data(self):
        p, evs = parse_all(b'id: 3-ab\nevent: canvas_commit\ndata: {"rev": 3}\n\n')
        self.assertEqual(evs, [Event(event="canvas_commit", id="3-ab", data={"rev": 3}, raw='{"rev": 3}')])
        self.assertEqual(p.last_event_id, "3-ab")

    def test_multiline_data_is_joined_with_newlines(self):
        _, evs = parse_all(b'event: x\ndata: {"a":\ndata: 1,\ndata:"b": 2}\n\n')
        self.assertEqual(len(evs), 1)
        self.assertEqual(evs[0].raw, '{"a":\n1,\n"b": 2}')
        self.assertEqual(evs[0].data, {"a": 1, "b": 2})

    def test_comments_and_heartbeats_are_ignored(self):
        _, evs = parse_all(b": heartbeat\n\n:hello\nevent: caught_up\n: mid-block comment\ndata: {}\n\n: heartbeat\n\n")
        self.assertEqual([e.event for e in evs], ["caught_up"])

    def test_retry_field(self):
        p, evs = parse_all(b"retry: 2500\n\nretry: 12x\n\nretry: 100\ndata: 1\n\n")
        self.assertEqual(p.retry, 100)
        self.assertEqual(evs[0].retry, 100)
        p, _ = parse_all(b"retry: 2500\n\nretry: 12x\n\n")
        self.assertEqual(p.retry, 2500, "a retry value that is not all digits is ignored")

    def test_line_endings_crlf_cr_lf_and_split_chunks(self):
        raw = b'id: 1\r\nevent: a\r\ndata: {"x": 1}\r\n\r\nid: 2\revent: b\rdata: 2\r\rid: 3\nevent: c\ndata: "s"\n\n'
        for chunk in (None, 1, 2, 3, 7):
            with self.subTest(chunk=chunk):
                p, evs = parse_all(raw, chunk=chunk)
                self.assertEqual([(e.event, e.id, e.data) for e in evs], [("a", "1", {"x": 1}), ("b", "2", 2), ("c", "3", "s")])
                self.assertEqual(p.last_event_id, "3")

    def test_utf8_split_across_chunks_and_bom(self):
        raw = '\ufeffdata: {"name": "Idée ✓"}\n\n'.encode("utf-8")
        for chunk in (1, 2, 5):
            _, evs = parse_all(raw, chunk=chunk)
            self.assertEqual(evs[0].data, {"name": "Idée ✓"})
            self.assertEqual(evs[0].event, "message")

    def test_block_without_data_dispatches_nothing_but_keeps_id(self):
        p, evs = parse_all(b"id: 7\nevent: x\n\n")
        self.assertEqual(evs, [])
        self.assertEqual(p.last_event_id, "7")

    def test_id_with_nul_is_ignored_and_event_without_id_has_none(self):
        p, evs = parse_all(b"id: 5\ndata: 1\n\nid: a\x00b\ndata: 2\n\nevent: gesture\ndata: {}\n\n")
        self.assertEqual([e.id for e in evs], ["5", None, None])
        self.assertEqual(p.last_event_id, "5")

    def test_field_without_colon_and_value_spaces(self):
        _, evs = parse_all(b"data\ndata:  two spaces\n\n")
        self.assertEqual(evs[0].raw, "\n two spaces")

    def test_non_json_data_is_kept_as_string(self):
        _, evs = parse_all(b"data: not json\n\n")
        self.assertEqual(evs[0].data, "not json")

    def test_long_line_in_many_chunks(self):
        line = "x" * (1 << 20)
        raw = ('id: 7\r\ndata: "%s"\r\n\r\n' % line).encode()
        for chunk in (4096, 65536, 65535):
            with self.subTest(chunk=chunk):
                p, evs = parse_all(raw, chunk=chunk)
                self.assertEqual([(e.id, len(e.data)) for e in evs], [("7", len(line))])

    def test_cr_then_an_empty_chunk_then_lf(self):
        # A CR ending a chunk, a chunk that decodes to nothing (half a UTF-8
        # character), then the CRLF's LF: one line end, not two.
        p = SSEParser()
        evs = p.feed(b"data: a\r") + p.feed(b"") + p.feed(b"\ndata: \xc3") + p.feed(b"\xa9\n\n")
        self.assertEqual([e.raw for e in evs], ["a\n\u00e9"])

    def test_incomplete_block_is_not_dispatched_and_reset_connection_drops_it(self):
        p = SSEParser("8")
        self.assertEqual(p.feed(b'id: 9\nevent: canvas_commit\ndata: {"rev": 9}\n'), [])
        self.assertEqual(p.last_event_id, "8", "the id of an incomplete block is not yet the last event id")
        p.reset_connection()
        self.assertEqual(p.feed(b"\n"), [])
        self.assertEqual(p.last_event_id, "8", "a block cut off by a dropped connection must be replayed")
        evs = p.feed(b'id: 9\ndata: {"rev": 9}\n\n')
        self.assertEqual([e.id for e in evs], ["9"])
        self.assertEqual(p.last_event_id, "9")


if __name__ == "__main__":
    unittest.main()
