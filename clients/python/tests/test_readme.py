"""The README's Python examples run verbatim against a real canvasd."""

import os
import re
import subprocess
import sys
import tempfile
import unittest

try:
    from . import _support  # run as the package tests (-t clients/python)
except ImportError:
    import _support  # noqa: F401  (run with -s clients/python/tests; puts the client on sys.path)

README = os.path.join(_support.CLIENT_DIR, "README.md")


def python_blocks(text):
    return re.findall(r"^```python\n(.*?)^```", text, re.S | re.M)


class ReadmeTest(unittest.TestCase):
    def test_examples_run_verbatim(self):
        with open(README, encoding="utf-8") as f:
            blocks = python_blocks(f.read())
        self.assertGreaterEqual(len(blocks), 5)
        srv = _support.CanvasdServer().start()
        self.addCleanup(srv.cleanup)
        with tempfile.TemporaryDirectory() as d:
            script = os.path.join(d, "readme_examples.py")
            with open(script, "w", encoding="utf-8") as f:
                f.write("\n".join(blocks))
            env = dict(os.environ, CANVASD_URL=srv.url, CANVASD_TOKEN=srv.admin_token,
                       PYTHONPATH=_support.CLIENT_DIR)
            p = subprocess.run([sys.executable, script], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                               env=env, cwd=d, timeout=120)
        out = p.stdout.decode("utf-8", "replace")
        self.assertEqual(p.returncode, 0, out)
        self.assertIn("applied as revision 1", out)
        self.assertIn("Idea v2 (reviewed)", out)
        self.assertIn("live from revision", out)


if __name__ == "__main__":
    unittest.main()
