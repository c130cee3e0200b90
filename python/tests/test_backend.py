"""Tests of the package's build backend (python/_build/backend.py): the wheels and the sdist
it writes are correct (RECORD hashes and sizes, METADATA, WHEEL tags, file modes),
reproducible, hold only the package, and its pyproject.toml reader agrees with tomllib.

Each test builds from a copy of python/ in a scratch folder, so it may leave stray files
in the package folder to show the backend ignores them. pip's own use of the backend
(pip install ./python, -e, the sdist, the platform wheel) is tests/install/python.sh.
"""

import base64
import csv
import hashlib
import importlib.util
import io
import os
import shutil
import subprocess
import sys
import tarfile
import zipfile

import pytest

import vpipe

PYTHON_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LIBRARY = os.environ.get("VPIPE_LIBRARY", "")


def load_backend(root):
    spec = importlib.util.spec_from_file_location(f"backend_{abs(hash(str(root)))}",
                                                  os.path.join(root, "_build", "backend.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def copy(tmp_path):
    """A copy of python/ (without caches) and its backend."""
    root = tmp_path / "python"
    shutil.copytree(PYTHON_DIR, root, ignore=shutil.ignore_patterns("__pycache__"))
    return root, load_backend(root)


def check_wheel(path):
    """Checks the wheel's RECORD against its contents; returns (zip, {name: bytes}, WHEEL
    fields, METADATA text)."""
    z = zipfile.ZipFile(path)
    files = {info.filename: z.read(info) for info in z.infolist()}
    info_dir = next(n.split("/")[0] for n in files if n.endswith(".dist-info/RECORD"))
    rows = list(csv.reader(io.StringIO(files[f"{info_dir}/RECORD"].decode())))
    assert sorted(r[0] for r in rows) == sorted(files)
    for name, digest, size in rows:
        if name == f"{info_dir}/RECORD":
            assert (digest, size) == ("", "")
            continue
        want = base64.urlsafe_b64encode(hashlib.sha256(files[name]).digest()).rstrip(b"=")
        assert digest == "sha256=" + want.decode() and int(size) == len(files[name]), name
    wheel = dict(line.split(": ", 1) for line in files[f"{info_dir}/WHEEL"].decode().splitlines())
    return z, files, wheel, files[f"{info_dir}/METADATA"].decode()


def test_the_pure_wheel(copy, tmp_path):
    root, backend = copy
    (root / "vpipe" / "libvpipe.so.0").write_bytes(b"\x7fELF stray")  # left by someone
    (root / "vpipe" / "__pycache__").mkdir()
    name = backend.build_wheel(str(tmp_path))
    assert name == f"vpipe-{vpipe.__version__}-py3-none-any.whl"
    z, files, wheel, metadata = check_wheel(tmp_path / name)
    modules = sorted(f"vpipe/{n}" for n in os.listdir(os.path.join(PYTHON_DIR, "vpipe"))
                     if n.endswith(".py") or n == "py.typed")
    info = f"vpipe-{vpipe.__version__}.dist-info"
    assert sorted(files) == sorted(modules + [f"{info}/{n}" for n in
                                              ["METADATA", "WHEEL", "RECORD", "top_level.txt"]])
    assert wheel == {"Wheel-Version": "1.0", "Generator": "vpipe-backend",
                     "Root-Is-Purelib": "true", "Tag": "py3-none-any"}
    head, _, body = metadata.partition("\n\n")
    fields = [line.split(": ", 1) for line in head.splitlines()]
    assert fields[:5] == [["Metadata-Version", "2.1"], ["Name", "vpipe"],
                          ["Version", vpipe.__version__],
                          ["Summary", fields[3][1]], ["Requires-Python", ">=3.9"]]
    assert "Classifier" in dict(fields) and fields[-1] == ["Description-Content-Type",
                                                           "text/markdown"]
    assert body == (root / "README.md").read_text()
    assert all((i.external_attr >> 16) == 0o100644 for i in z.infolist())
    for module in modules:
        assert files[module] == (root / module).read_bytes()


def test_wheels_are_reproducible(copy, tmp_path, monkeypatch):
    root, backend = copy
    first, second = tmp_path / "a", tmp_path / "b"
    first.mkdir(), second.mkdir()
    name = backend.build_wheel(str(first))
    os.utime(root / "vpipe" / "__init__.py", (0, 0))
    backend.build_wheel(str(second))
    assert (first / name).read_bytes() == (second / name).read_bytes()
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1700000000")
    backend.build_wheel(str(second))
    dated = zipfile.ZipFile(second / name).infolist()[0].date_time
    assert dated == (2023, 11, 14, 22, 13, 20)


@pytest.mark.skipif(not LIBRARY, reason="VPIPE_LIBRARY (the built library) is not set")
def test_the_platform_wheel_carries_the_library(copy, tmp_path):
    root, backend = copy
    name = backend.build_wheel(str(tmp_path), {"library": LIBRARY,
                                               "version": vpipe.__version__})
    assert name.startswith(f"vpipe-{vpipe.__version__}-py3-none-linux_")
    z, files, wheel, _ = check_wheel(tmp_path / name)
    assert wheel["Root-Is-Purelib"] == "false" and wheel["Tag"] == name[:-4].split("-", 2)[2]
    with open(LIBRARY, "rb") as f:
        assert files["vpipe/libvpipe.so.0"] == f.read()
    assert z.getinfo("vpipe/libvpipe.so.0").external_attr >> 16 == 0o100755


def test_the_platform_wheel_refuses_what_it_cannot_carry(copy, tmp_path):
    root, backend = copy
    with pytest.raises(backend.BuildError, match="not 9.9.9"):
        backend.build_wheel(str(tmp_path), {"library": LIBRARY, "version": "9.9.9"})
    text = tmp_path / "libvpipe.so"
    text.write_text("not a library")
    with pytest.raises(backend.BuildError, match="no ELF header"):
        backend.build_wheel(str(tmp_path), {"library": str(text)})
    with pytest.raises(backend.BuildError, match="cannot read the library"):
        backend.build_wheel(str(tmp_path), {"library": str(tmp_path / "missing.so")})
    assert not [n for n in os.listdir(tmp_path) if n.endswith(".whl")]


def test_the_sdist_builds_the_same_wheel(copy, tmp_path):
    root, backend = copy
    name = backend.build_sdist(str(tmp_path))
    stem = f"vpipe-{vpipe.__version__}"
    assert name == f"{stem}.tar.gz"
    with tarfile.open(tmp_path / name) as tar:
        names = tar.getnames()
        assert all(n.startswith(f"{stem}/") for n in names)
        for n in ["PKG-INFO", "pyproject.toml", "README.md", "_build/backend.py",
                  "vpipe/__init__.py", "tests/test_vpipe.py"]:
            assert f"{stem}/{n}" in names
        tar.extractall(tmp_path / "unpacked")
    unpacked = load_backend(tmp_path / "unpacked" / stem)
    (tmp_path / "from_sdist").mkdir()
    (tmp_path / "from_source").mkdir()
    wheel = unpacked.build_wheel(str(tmp_path / "from_sdist"))
    assert wheel == backend.build_wheel(str(tmp_path / "from_source"))
    assert ((tmp_path / "from_sdist" / wheel).read_bytes()
            == (tmp_path / "from_source" / wheel).read_bytes())


def test_the_editable_wheel_imports_the_source(copy, tmp_path):
    root, backend = copy
    name = backend.build_editable(str(tmp_path))
    _, files, wheel, _ = check_wheel(tmp_path / name)
    assert files["_vpipe_editable.pth"] == b"import _vpipe_editable\n"
    site = tmp_path / "site"
    zipfile.ZipFile(tmp_path / name).extractall(site)
    code = f"import site; site.addsitedir({str(site)!r}); import vpipe; print(vpipe.__file__)"
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       env=dict(os.environ, PYTHONPATH=""))
    assert r.stdout.strip() == str(root / "vpipe" / "__init__.py"), r.stderr


def test_the_toml_reader_agrees_with_tomllib(copy):
    tomllib = pytest.importorskip("tomllib")
    root, backend = copy
    text = (root / "pyproject.toml").read_text()
    assert backend.read_toml(text) == tomllib.loads(text)
    assert backend.get_requires_for_build_wheel() == []
    assert tomllib.loads(text)["build-system"]["requires"] == []


@pytest.mark.parametrize("text, line", [("[t]\nk = {x = 1}\n", 2), ("k = 1\n", 1),
                                        ("[t]\n\nk = 'single'\n", 3), ("[t]\nk 1\n", 2)])
def test_the_toml_reader_refuses_what_it_does_not_know(copy, text, line):
    _, backend = copy
    with pytest.raises(backend.BuildError, match=f"pyproject.toml:{line}: "):
        backend.read_toml(text)


def test_the_command(copy, tmp_path):
    root, _ = copy
    script = str(root / "_build" / "backend.py")
    r = subprocess.run([sys.executable, script, "wheel", str(tmp_path / "out")],
                       capture_output=True, text=True)
    assert r.returncode == 0 and r.stdout.strip().endswith("-py3-none-any.whl"), r.stderr
    for bad in (["egg"], ["wheel", str(tmp_path), "--color", "red"], ["wheel"]):
        r = subprocess.run([sys.executable, script, *bad], capture_output=True, text=True)
        assert r.returncode == 2 and r.stderr.startswith("usage: backend.py"), bad
    r = subprocess.run([sys.executable, script, "wheel", str(tmp_path), "--version", "0.0.1"],
                       capture_output=True, text=True)
    assert r.returncode == 1 and "not 0.0.1" in r.stderr
