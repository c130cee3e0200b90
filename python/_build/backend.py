"""vpipe's build backend (PEP 517, PEP 660): wheels and sdists from the standard library
alone, so `pip install ./python` needs nothing installed and no network, on any CPython
>= 3.9, in a virtual environment with or without setuptools.

- build_wheel: the pure package, `vpipe-VERSION-py3-none-any.whl`. With the config
  setting `library=PATH` (pip's `-C library=PATH`), a platform wheel
  `vpipe-VERSION-py3-none-PLATFORM.whl` that carries that libvpipe.so.0 inside the
  package, which then loads it first (the `wheel` target of the CMake build makes one).
- build_sdist: `vpipe-VERSION.tar.gz`, from which build_wheel gives the same wheel.
- build_editable: a wheel whose import hook loads `vpipe` from this source folder.

The metadata comes from pyproject.toml's [project] table (read by a small reader of the
TOML this file uses, as tomllib is 3.11's) and the version from vpipe/__init__.py. Archives
are reproducible: sorted, with fixed dates (SOURCE_DATE_EPOCH when set) and modes.

Also a command: `python3 backend.py wheel|sdist OUT_DIR [--library PATH] [--version V]`
(--version refuses to build when the package's version differs, e.g. the C library's).
"""

from __future__ import annotations

import base64
import csv
import gzip
import hashlib
import io
import json
import os
import re
import sys
import sysconfig
import tarfile
import time
import zipfile
from typing import Dict, List, Optional, Tuple

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PACKAGE = "vpipe"
LIBRARY = "libvpipe.so.0"  # the name the package looks for beside its modules
SDIST_FILES = ["pyproject.toml", "README.md", "_build/backend.py"]

Files = List[Tuple[str, bytes, int]]  # (archive path, contents, mode)


class BuildError(Exception):
    """A build that cannot be made: the message says why."""


# ---- pyproject.toml ------------------------------------------------------------------


def read_toml(text: str) -> Dict[str, dict]:
    """The tables of the TOML subset pyproject.toml uses: [table] headers, `key = value`
    where a value is a string, a number, a boolean or an array of those (which may span
    lines), and comment lines. Anything else is a BuildError naming the line."""
    tables: Dict[str, dict] = {}
    current: Optional[dict] = None
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        line, start = lines[i].strip(), i + 1
        i += 1
        if not line or line.startswith("#"):
            continue
        header = re.fullmatch(r"\[([A-Za-z0-9_.-]+)\]", line)
        if header:
            current = tables.setdefault(header.group(1), {})
            continue
        pair = re.fullmatch(r"([A-Za-z0-9_-]+)\s*=\s*(.+)", line)
        if not pair or current is None:
            raise BuildError(f"pyproject.toml:{start}: cannot read {line!r}")
        value = pair.group(2)
        while value.startswith("[") and value.count("[") > value.count("]") and i < len(lines):
            value += lines[i].strip()
            i += 1
        try:
            current[pair.group(1)] = json.loads(re.sub(r",\s*\]$", "]", value))
        except ValueError:
            raise BuildError(f"pyproject.toml:{start}: cannot read the value {value!r}") from None
    return tables


def _project() -> dict:
    with open(os.path.join(ROOT, "pyproject.toml"), encoding="utf-8") as f:
        project = dict(read_toml(f.read()).get("project", {}))
    with open(os.path.join(ROOT, PACKAGE, "__init__.py"), encoding="utf-8") as f:
        found = re.search(r'^__version__ = "([^"]+)"$', f.read(), re.M)
    if not found:
        raise BuildError(f"{PACKAGE}/__init__.py has no __version__ line")
    project["version"] = found.group(1)
    return project


def metadata(project: dict) -> bytes:
    """The core metadata (METADATA, PKG-INFO): version 2.1, the README as description."""
    lines = [
        "Metadata-Version: 2.1",
        f"Name: {project['name']}",
        f"Version: {project['version']}",
        f"Summary: {project['description']}",
        f"Requires-Python: {project['requires-python']}",
    ]
    lines += [f"Classifier: {c}" for c in project.get("classifiers", [])]
    with open(os.path.join(ROOT, project["readme"]), encoding="utf-8") as f:
        readme = f.read()
    lines += ["Description-Content-Type: text/markdown", "", readme]
    return "\n".join(lines).encode()


# ---- archives ------------------------------------------------------------------------


def _epoch() -> int:
    """The archives' date: SOURCE_DATE_EPOCH, else (and at least) 1980-01-01, the first
    a zip file can hold."""
    return max(int(os.environ.get("SOURCE_DATE_EPOCH", "0")), 315532800)


def _package_files() -> Files:
    """The package's modules and py.typed, never a library or a cache lying beside them."""
    out = []
    for name in sorted(os.listdir(os.path.join(ROOT, PACKAGE))):
        if name.endswith(".py") or name == "py.typed":
            with open(os.path.join(ROOT, PACKAGE, name), "rb") as f:
                out.append((f"{PACKAGE}/{name}", f.read(), 0o644))
    return out


def _record_hash(data: bytes) -> str:
    digest = hashlib.sha256(data).digest()
    return "sha256=" + base64.urlsafe_b64encode(digest).rstrip(b"=").decode()


def _write_wheel(directory: str, tag: str, files: Files, purelib: bool) -> str:
    """Writes the wheel of files with its dist-info (METADATA, WHEEL, RECORD); returns its
    file name."""
    project = _project()
    stem = f"{project['name']}-{project['version']}"
    info = f"{stem}.dist-info"
    wheel = ("Wheel-Version: 1.0\nGenerator: vpipe-backend\n"
             f"Root-Is-Purelib: {'true' if purelib else 'false'}\nTag: {tag}\n")
    files = sorted(files) + [(f"{info}/METADATA", metadata(project), 0o644),
                             (f"{info}/WHEEL", wheel.encode(), 0o644),
                             (f"{info}/top_level.txt", f"{PACKAGE}\n".encode(), 0o644)]
    record = io.StringIO()
    writer = csv.writer(record, lineterminator="\n")
    for path, data, _ in files:
        writer.writerow([path, _record_hash(data), len(data)])
    writer.writerow([f"{info}/RECORD", "", ""])
    files.append((f"{info}/RECORD", record.getvalue().encode(), 0o644))
    name = f"{stem}-{tag}.whl"
    with zipfile.ZipFile(os.path.join(directory, name), "w", zipfile.ZIP_DEFLATED) as z:
        for path, data, mode in files:
            entry = zipfile.ZipInfo(path, time.gmtime(_epoch())[:6])
            entry.external_attr = (0o100000 | mode) << 16
            entry.compress_type = zipfile.ZIP_DEFLATED
            z.writestr(entry, data)
    return name


def _platform_tag() -> str:
    return re.sub(r"[^A-Za-z0-9]", "_", sysconfig.get_platform())


def _library(path: str) -> bytes:
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as e:
        raise BuildError(f"cannot read the library {path}: {e.strerror}") from None
    if not data.startswith(b"\x7fELF"):
        raise BuildError(f"{path} is not a shared library (no ELF header)")
    return data


# ---- PEP 517 and PEP 660 hooks -------------------------------------------------------


def get_requires_for_build_wheel(config_settings=None) -> List[str]:
    return []


def get_requires_for_build_sdist(config_settings=None) -> List[str]:
    return []


def get_requires_for_build_editable(config_settings=None) -> List[str]:
    return []


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None) -> str:
    """The pure wheel, or with config_settings {"library": PATH} the platform wheel that
    carries PATH as vpipe/libvpipe.so.0 (and with {"version": V}, only when the package's
    version is V)."""
    settings = config_settings or {}
    version = settings.get("version")
    if version and version != _project()["version"]:
        raise BuildError(f"the package's version is {_project()['version']}, not {version}: "
                         f"update __version__ in {PACKAGE}/__init__.py")
    files = _package_files()
    library = settings.get("library")
    if not library:
        return _write_wheel(wheel_directory, "py3-none-any", files, purelib=True)
    files.append((f"{PACKAGE}/{LIBRARY}", _library(library), 0o755))
    return _write_wheel(wheel_directory, f"py3-none-{_platform_tag()}", files, purelib=False)


_FINDER = '''"""Loads the vpipe package from its source folder (an editable install)."""
import importlib.abc
import importlib.util
import sys

_PATH = {path!r}


class _Finder(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name != "vpipe":
            return None
        return importlib.util.spec_from_file_location(
            name, _PATH + "/__init__.py", submodule_search_locations=[_PATH])


sys.meta_path.append(_Finder())
'''


def build_editable(wheel_directory, config_settings=None, metadata_directory=None) -> str:
    """A wheel holding an import hook that loads `vpipe` from this source folder."""
    finder = _FINDER.format(path=os.path.join(ROOT, PACKAGE)).encode()
    files = [("_vpipe_editable.py", finder, 0o644),
             ("_vpipe_editable.pth", b"import _vpipe_editable\n", 0o644)]
    return _write_wheel(wheel_directory, "py3-none-any", files, purelib=True)


def build_sdist(sdist_directory, config_settings=None) -> str:
    """vpipe-VERSION.tar.gz: pyproject.toml, README.md, this backend, the package and its
    tests, and PKG-INFO."""
    project = _project()
    stem = f"{project['name']}-{project['version']}"
    names = list(SDIST_FILES)
    for folder in (PACKAGE, "tests"):
        names += [f"{folder}/{n}" for n in sorted(os.listdir(os.path.join(ROOT, folder)))
                  if n.endswith(".py") or n == "py.typed"]
    members = [("PKG-INFO", metadata(project))]
    for name in names:
        with open(os.path.join(ROOT, name), "rb") as f:
            members.append((name, f.read()))
    name = f"{stem}.tar.gz"
    mtime = _epoch()
    with open(os.path.join(sdist_directory, name), "wb") as raw, \
            gzip.GzipFile(fileobj=raw, mode="wb", mtime=mtime) as gz, \
            tarfile.open(fileobj=gz, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for path, data in sorted(members):
            entry = tarfile.TarInfo(f"{stem}/{path}")
            entry.size, entry.mtime, entry.mode = len(data), mtime, 0o644
            tar.addfile(entry, io.BytesIO(data))
    return name


def main(argv: List[str]) -> int:
    usage = "usage: backend.py wheel|sdist OUT_DIR [--library PATH] [--version V]"
    if len(argv) < 2 or argv[0] not in ("wheel", "sdist") or len(argv) % 2:
        print(usage, file=sys.stderr)
        return 2
    settings = dict(zip(argv[2::2], argv[3::2]))
    unknown = set(settings) - {"--library", "--version"}
    if unknown:
        print(f"{usage}\nunknown option {sorted(unknown)[0]}", file=sys.stderr)
        return 2
    os.makedirs(argv[1], exist_ok=True)
    try:
        if argv[0] == "sdist":
            name = build_sdist(argv[1])
        else:
            name = build_wheel(argv[1], {k[2:]: v for k, v in settings.items()})
    except BuildError as e:
        print(f"backend.py: {e}", file=sys.stderr)
        return 1
    print(os.path.join(argv[1], name))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
