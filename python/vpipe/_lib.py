"""Finding and calling libvpipe through ctypes: the one place that knows the C API.

Everything the package calls is declared here with its argument and result types. Text
results are C strings the library allocates; `take_text` copies them and frees them with
the library's own vp_free (never this process's free(), which an allocator preload such
as jemalloc may have replaced). A failing call raises the `vpipe.Error` subclass of its
status with the library's message.
"""

from __future__ import annotations

import ctypes
import glob
import os
import shutil
import threading
from typing import Any, Callable, Optional

from ._errors import LibraryNotFound, error

SONAME = "libvpipe.so.0"


class _CError(ctypes.Structure):
    """vp_error of vpipe/base.h."""

    _fields_ = [
        ("status", ctypes.c_int),
        ("line", ctypes.c_int),
        ("column", ctypes.c_int),
        ("message", ctypes.c_char * 512),
    ]


class _ScheduleHead(ctypes.Structure):
    """The first fields of vp_schedule (vpipe/schedule.h), read for the shape."""

    _fields_ = [
        ("family", ctypes.c_char * 32),
        ("p", ctypes.c_int),
        ("S", ctypes.c_int),
        ("m", ctypes.c_int),
        ("route_len", ctypes.c_int),
        ("placement", ctypes.c_int),
    ]


class _Family(ctypes.Structure):
    """The first fields of vp_family (vpipe/families.h)."""

    _fields_ = [
        ("name", ctypes.c_char_p),
        ("summary", ctypes.c_char_p),
        ("needs", ctypes.c_char_p),
    ]


_P = ctypes.c_void_p
_OUT = ctypes.POINTER(ctypes.c_void_p)
_ERR = ctypes.POINTER(_CError)
_S = ctypes.c_char_p
_I = ctypes.c_int

# name: (result type, argument types)
_SIGNATURES = {
    "vp_version": (_S, []),
    "vp_free": (None, [_P]),
    "vp_status_name": (_S, [_I]),
    "vp_request_schedule": (_I, [_S, _OUT, _ERR]),
    "vp_request_simulate": (_I, [_P, _S, _OUT, _ERR]),
    "vp_request_render": (_I, [_P, _S, _S, _OUT, _ERR]),
    "vp_request_plan": (_I, [_S, _OUT, _OUT, _ERR]),
    "vp_request_price": (_I, [_P, _S, _OUT, _OUT, _ERR]),
    "vp_schedule_parse": (_I, [_S, ctypes.c_size_t, _OUT, _ERR]),
    "vp_schedule_load": (_I, [_S, _OUT, _ERR]),
    "vp_schedule_free": (None, [_P]),
    "vp_placement_name": (_S, [_I]),
    "vp_json_write": (_I, [_P, _OUT, _ERR]),
    "vp_torch_csv_write": (_I, [_P, _I, _OUT, _ERR]),
    "vp_torch_schedule_name": (_S, [_P]),
    "vp_torch_csv_notes": (_I, [_P, ctypes.c_char_p, ctypes.c_size_t]),
    "vp_family_count": (_I, []),
    "vp_family_at": (ctypes.POINTER(_Family), [_I]),
    "vp_arch_preset_count": (_I, []),
    "vp_arch_preset_name": (_S, [_I]),
    "vp_gpu_preset_count": (_I, []),
    "vp_gpu_preset_name": (_S, [_I]),
}


def _candidates() -> list[str]:
    """Where to look, in order: $VPIPE_LIBRARY; the library inside the package (a wheel
    built by the `wheel` target carries one); the loader's soname; beside `vpipe`."""
    env = os.environ.get("VPIPE_LIBRARY")
    if env:
        return [env]
    bundled = os.path.join(os.path.dirname(os.path.abspath(__file__)), SONAME)
    found = [bundled] if os.path.isfile(bundled) else []
    found.append(SONAME)
    binary = shutil.which("vpipe")
    if binary:
        prefix = os.path.dirname(os.path.dirname(os.path.realpath(binary)))
        found += sorted(glob.glob(os.path.join(prefix, "lib*", SONAME)))
        found += sorted(glob.glob(os.path.join(prefix, "lib*", "*", SONAME)))
    return found


def _open() -> ctypes.CDLL:
    tried = []
    for path in _candidates():
        try:
            lib = ctypes.CDLL(path)
        except OSError as e:
            tried.append(f"{path} ({e})")
            continue
        for name, (restype, argtypes) in _SIGNATURES.items():
            fn = getattr(lib, name)
            fn.restype, fn.argtypes = restype, argtypes
        return lib
    raise LibraryNotFound(
        "cannot load libvpipe: set VPIPE_LIBRARY to the path of libvpipe.so, install it where "
        "the loader finds it, or put the installed vpipe binary on PATH; tried "
        + "; ".join(tried))


_lock = threading.Lock()
_loaded: Optional[ctypes.CDLL] = None


def lib() -> ctypes.CDLL:
    """The loaded library (loaded on first use). Raises LibraryNotFound when it cannot be
    loaded."""
    global _loaded
    with _lock:
        if _loaded is None:
            _loaded = _open()
        return _loaded


def take_text(ptr: ctypes.c_void_p) -> str:
    """Copies a C string the library returned and frees it with vp_free."""
    try:
        return ctypes.string_at(ptr).decode("utf-8")
    finally:
        lib().vp_free(ptr)


def check(call: Callable[[Any], int]) -> None:
    """Runs call(err) and raises the Error subclass of the status with the library's
    message when it fails."""
    err = _CError()
    status = call(ctypes.byref(err))
    if status != 0:
        name = lib().vp_status_name(status).decode()
        raise error(name, err.message.decode("utf-8", "replace"), err.line, err.column)


def text_of(call: Callable[[Any, Any], int]) -> str:
    """Runs call(out, err), which leaves a new C string in out, and returns it as str."""
    out = ctypes.c_void_p()
    check(lambda err: call(ctypes.byref(out), err))
    return take_text(out)
