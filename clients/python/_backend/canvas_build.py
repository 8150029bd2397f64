"""A tiny in-tree PEP 517 / PEP 660 build backend, standard library only.

Why: ``pip install ./clients/python`` must work on a machine with no package
index (pip's build isolation would otherwise download setuptools and wheel).
This backend has no requirements, so pip builds the wheel offline, with or
without build isolation. It packs the ``canvas_client`` package (every file in
it) into a pure-Python ``py3-none-any`` wheel; metadata comes from the
``[project]`` table of pyproject.toml and the version from
``canvas_client/_version.py``.
"""

import base64
import hashlib
import io
import os
import re
import tarfile
import time
import zipfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PACKAGE = "canvas_client"
_ZIP_DATE = (1980, 1, 1, 0, 0, 0)


def _project():
    """Reads the string keys of pyproject.toml's [project] table (a subset of
    TOML enough for this file: ``key = "value"`` lines)."""
    meta = {}
    section = None
    with open(os.path.join(ROOT, "pyproject.toml"), encoding="utf-8") as f:
        for line in f:
            line = line.strip()
            if line.startswith("["):
                section = line.strip("[]").strip()
                continue
            if section != "project":
                continue
            m = re.match(r'^([A-Za-z0-9_-]+)\s*=\s*"((?:[^"\\]|\\.)*)"\s*(#.*)?$', line)
            if m:
                meta[m.group(1)] = m.group(2).replace('\\"', '"').replace("\\\\", "\\")
    with open(os.path.join(ROOT, PACKAGE, "_version.py"), encoding="utf-8") as f:
        m = re.search(r'^__version__\s*=\s*"([^"]+)"', f.read(), re.M)
    if not m:
        raise RuntimeError("no __version__ in %s/_version.py" % PACKAGE)
    meta["version"] = m.group(1)
    for key in ("name", "description", "requires-python"):
        if key not in meta:
            raise RuntimeError("pyproject.toml [project] lacks %r" % key)
    return meta


def _dist_name(meta):
    return re.sub(r"[-_.]+", "_", meta["name"]).lower()


def _metadata(meta):
    lines = [
        "Metadata-Version: 2.1",
        "Name: %s" % meta["name"],
        "Version: %s" % meta["version"],
        "Summary: %s" % meta["description"],
        "Requires-Python: %s" % meta["requires-python"],
    ]
    if "license" in meta:
        lines.append("License: %s" % meta["license"])
    readme = os.path.join(ROOT, "README.md")
    body = ""
    if os.path.exists(readme):
        lines.append("Description-Content-Type: text/markdown")
        with open(readme, encoding="utf-8") as f:
            body = f.read()
    return ("\n".join(lines) + "\n\n" + body).encode("utf-8")


def _wheel_file():
    return b"Wheel-Version: 1.0\nGenerator: canvas_build\nRoot-Is-Purelib: true\nTag: py3-none-any\n"


def _package_files():
    out = []
    pkg = os.path.join(ROOT, PACKAGE)
    for dirpath, dirnames, filenames in os.walk(pkg):
        dirnames[:] = sorted(d for d in dirnames if d != "__pycache__")
        for name in sorted(filenames):
            if name.endswith((".pyc", ".pyo")):
                continue
            full = os.path.join(dirpath, name)
            out.append((os.path.relpath(full, ROOT).replace(os.sep, "/"), full))
    return out


def _dist_info_files(meta):
    return {"METADATA": _metadata(meta), "WHEEL": _wheel_file(), "top_level.txt": (PACKAGE + "\n").encode()}


class _WheelWriter:
    def __init__(self, path):
        self._zip = zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED)
        self._record = []

    def add(self, arcname, data):
        info = zipfile.ZipInfo(arcname, date_time=_ZIP_DATE)
        info.external_attr = 0o644 << 16
        info.compress_type = zipfile.ZIP_DEFLATED
        self._zip.writestr(info, data)
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        self._record.append("%s,sha256=%s,%d" % (arcname, digest, len(data)))

    def close(self, record_name):
        self._record.append(record_name + ",,")
        info = zipfile.ZipInfo(record_name, date_time=_ZIP_DATE)
        info.external_attr = 0o644 << 16
        self._zip.writestr(info, ("\n".join(self._record) + "\n").encode())
        self._zip.close()


def _build(wheel_directory, editable):
    meta = _project()
    dist = _dist_name(meta)
    info_dir = "%s-%s.dist-info" % (dist, meta["version"])
    filename = "%s-%s-py3-none-any.whl" % (dist, meta["version"])
    w = _WheelWriter(os.path.join(wheel_directory, filename))
    if editable:
        w.add(dist + ".pth", (ROOT + "\n").encode())
    else:
        for arcname, full in _package_files():
            with open(full, "rb") as f:
                w.add(arcname, f.read())
    for name, data in _dist_info_files(meta).items():
        w.add(info_dir + "/" + name, data)
    w.close(info_dir + "/RECORD")
    return filename


# ---- PEP 517 hooks

def get_requires_for_build_wheel(config_settings=None):
    return []


def get_requires_for_build_sdist(config_settings=None):
    return []


def get_requires_for_build_editable(config_settings=None):
    return []


def prepare_metadata_for_build_wheel(metadata_directory, config_settings=None):
    meta = _project()
    info_dir = "%s-%s.dist-info" % (_dist_name(meta), meta["version"])
    os.makedirs(os.path.join(metadata_directory, info_dir), exist_ok=True)
    for name, data in _dist_info_files(meta).items():
        with open(os.path.join(metadata_directory, info_dir, name), "wb") as f:
            f.write(data)
    return info_dir


prepare_metadata_for_build_editable = prepare_metadata_for_build_wheel


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    return _build(wheel_directory, editable=False)


def build_editable(wheel_directory, config_settings=None, metadata_directory=None):
    return _build(wheel_directory, editable=True)


def build_sdist(sdist_directory, config_settings=None):
    meta = _project()
    base = "%s-%s" % (_dist_name(meta), meta["version"])
    filename = base + ".tar.gz"
    mtime = int(os.environ.get("SOURCE_DATE_EPOCH", time.time()))

    def add(tar, arcname, data):
        ti = tarfile.TarInfo(base + "/" + arcname)
        ti.size = len(data)
        ti.mtime = mtime
        ti.mode = 0o644
        tar.addfile(ti, io.BytesIO(data))

    with tarfile.open(os.path.join(sdist_directory, filename), "w:gz", format=tarfile.PAX_FORMAT) as tar:
        files = _package_files()
        for extra in ("pyproject.toml", "README.md", "_backend/canvas_build.py"):
            if os.path.exists(os.path.join(ROOT, extra)):
                files.append((extra, os.path.join(ROOT, extra)))
        tests = os.path.join(ROOT, "tests")
        if os.path.isdir(tests):
            for name in sorted(os.listdir(tests)):
                if name.endswith(".py"):
                    files.append(("tests/" + name, os.path.join(tests, name)))
        for arcname, full in files:
            with open(full, "rb") as f:
                add(tar, arcname, f.read())
        pkg_info = _metadata(meta)
        add(tar, "PKG-INFO", pkg_info)
    return filename
