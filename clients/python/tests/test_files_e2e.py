"""export and import_file against a real canvasd built from this tree."""

import json
import os
import struct
import unittest
import zlib

try:
    from . import _support  # run as the package tests (-t clients/python)
except ImportError:
    import _support  # noqa: F401

from canvas_client import CanvasAgentClient, ValidationError

SERVER = None
TESTDATA = os.path.join(_support.REPO_ROOT, "convert", "testdata")


def setUpModule():
    global SERVER
    SERVER = _support.CanvasdServer().start()


def tearDownModule():
    if SERVER is not None:
        SERVER.cleanup()


def png_pixel(data, x, y):
    """The (r, g, b[, a]) of pixel (x, y) of a PNG whose rows are unfiltered
    (as canvasd writes them)."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos, idat, width, ctype = 8, b"", 0, 0
    while pos < len(data):
        n, kind = struct.unpack(">I4s", data[pos:pos + 8])
        chunk = data[pos + 8:pos + 8 + n]
        if kind == b"IHDR":
            width, _, _, ctype = struct.unpack(">IIBB", chunk[:10])
        elif kind == b"IDAT":
            idat += chunk
        pos += 12 + n
    bpp = 3 if ctype == 2 else 4
    raw = zlib.decompress(idat)
    row = raw[y * (1 + bpp * width):(y + 1) * (1 + bpp * width)]
    assert row[0] == 0, "a filtered row"
    return tuple(row[1 + bpp * x:1 + bpp * (x + 1)])


class FilesTest(unittest.TestCase):
    def setUp(self):
        self.c = CanvasAgentClient(SERVER.url, token=SERVER.admin_token, timeout=30)
        self.addCleanup(self.c.close)
        self.cid = self.c.create_canvas(title="files " + self._testMethodName)["canvas_id"]

    def test_json_canvas_round_trip(self):
        with open(os.path.join(TESTDATA, "jsoncanvas", "sample.canvas"), "rb") as f:
            data = f.read()
        r = self.c.import_file(self.cid, data, "jsoncanvas", base_rev=0, idempotency_key="py-import-1")
        self.assertEqual(r.rev, 1)
        self.assertIn("754a8ef995f366bc", r.created_ids)
        again = self.c.import_file(self.cid, data, "jsoncanvas", base_rev=0, idempotency_key="py-import-1")
        self.assertTrue(again.replayed)
        out = self.c.export(self.cid, "jsoncanvas")
        self.assertEqual(json.loads(data), json.loads(out))

    def test_mermaid_and_png(self):
        chart = "flowchart LR\n  a[Red] --> b[Blue]\n  style a fill:#ff0000,stroke:#ff0000"
        self.c.import_file(self.cid, chart, "mermaid")
        png = self.c.export(self.cid, "png", ids=["a"])
        self.assertEqual(png_pixel(png, 15, 30)[:3], (255, 0, 0))
        svg = self.c.export(self.cid, "svg").decode("utf-8")
        self.assertTrue(svg.startswith("<svg"))
        self.assertIn(">Red</tspan>", svg)

    def test_bad_file_names_the_place(self):
        with self.assertRaises(ValidationError) as cm:
            self.c.import_file(self.cid, "flowchart LR\n  a -->", "mermaid")
        self.assertEqual(cm.exception.field, "body line 2")
        with self.assertRaises(ValidationError) as cm:
            self.c.export(self.cid, "png", scale=100)
        self.assertEqual(cm.exception.field, "scale")


if __name__ == "__main__":
    unittest.main()
