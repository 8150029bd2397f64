"""The package installs offline with pip, and its source stays Python 3.9 syntax."""

import ast
import base64
import hashlib
import os
import subprocess
import sys
import tempfile
import unittest
import zipfile

try:
    from . import _support  # run as the package tests (-t clients/python)
except ImportError:
    import _support  # noqa: F401  (run with -s clients/python/tests; puts the client on sys.path)

sys.path.insert(0, os.path.join(_support.CLIENT_DIR, "_backend"))
import canvas_build  # noqa: E402

import canvas_client  # noqa: E402


class PackagingTest(unittest.TestCase):
    def test_wheel_contents_and_record(self):
        with tempfile.TemporaryDirectory() as d:
            name = canvas_build.build_wheel(d)
            self.assertEqual(name, "canvas_client-%s-py3-none-any.whl" % canvas_client.__version__)
            with zipfile.ZipFile(os.path.join(d, name)) as z:
                names = set(z.namelist())
                for f in ("canvas_client/__init__.py", "canvas_client/client.py", "canvas_client/sse.py",
                          "canvas_client/errors.py", "canvas_client/py.typed"):
                    self.assertIn(f, names)
                self.assertFalse([n for n in names if "__pycache__" in n or n.startswith("tests/")])
                info = "canvas_client-%s.dist-info/" % canvas_client.__version__
                meta = z.read(info + "METADATA").decode()
                self.assertIn("Name: canvas-client\n", meta)
                self.assertIn("Requires-Python: >=3.9\n", meta)
                record = z.read(info + "RECORD").decode().splitlines()
                self.assertEqual(len(record), len(names))
                for line in record:
                    path, digest, size = line.rsplit(",", 2)
                    if path == info + "RECORD":
                        continue
                    data = z.read(path)
                    want = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
                    self.assertEqual((digest, int(size)), ("sha256=" + want, len(data)), path)

    def test_sdist_builds(self):
        with tempfile.TemporaryDirectory() as d:
            name = canvas_build.build_sdist(d)
            self.assertTrue(os.path.getsize(os.path.join(d, name)) > 1000)

    def test_pip_installs_offline(self):
        with tempfile.TemporaryDirectory() as d:
            target = os.path.join(d, "site")
            p = subprocess.run(
                [sys.executable, "-m", "pip", "install", "--no-index", "--no-deps", "--no-cache-dir",
                 "--disable-pip-version-check", "--target", target, _support.CLIENT_DIR],
                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=300, cwd=d,
            )
            self.assertEqual(p.returncode, 0, p.stdout.decode("utf-8", "replace"))
            out = subprocess.run(
                [sys.executable, "-c", "import canvas_client as c; print(c.__file__, c.__version__)"],
                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, cwd=d, env=dict(os.environ, PYTHONPATH=target),
            )
            text = out.stdout.decode()
            self.assertEqual(out.returncode, 0, text)
            self.assertTrue(text.startswith(target), text)
            self.assertIn(canvas_client.__version__, text)

    def test_source_is_python_3_9_syntax(self):
        pkg = os.path.join(_support.CLIENT_DIR, "canvas_client")
        files = [os.path.join(pkg, f) for f in os.listdir(pkg) if f.endswith(".py")]
        files.append(os.path.join(_support.CLIENT_DIR, "_backend", "canvas_build.py"))
        for path in files:
            with open(path, encoding="utf-8") as f:
                ast.parse(f.read(), path, feature_version=(3, 9))


if __name__ == "__main__":
    unittest.main()
