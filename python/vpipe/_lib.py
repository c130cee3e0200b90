"""Finding and calling libvpipe through ctypes: the one place that knows the C API.

Everything the package calls is declared here with its argument and result types. Every
command goes through the front door, vp_request_call_with (vpipe/request.h: the one body
of vp_request_call, vp_request_call_schedule and vp_profile_request_call); a request with
"cost_file" also needs libvpipe-runtime, whose reader of `vpipe profile` files
(vp_profile_cost_reader) `cost_reader` finds and loads on first use. Text results are C
strings the library allocates; `take_text` copies them and frees them with the library's
own vp_free (never this process's free(), which an allocator preload such as jemalloc may
have replaced). A failing call raises the `vpipe.Error` subclass of its status with the
library's message and the command line's exit code.
"""

from __future__ import annotations

import ctypes
import glob
import os
import shutil
import threading
from typing import Any, Callable, List, Optional, Tuple

from ._errors import LibraryNotFound, error

SONAME = "libvpipe.so.0"
RUNTIME_SONAME = "libvpipe-runtime.so.0"


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
    "vp_status_exit_code": (_I, [_I]),
    # command, schedule (NULL: none), options JSON, cost reader (NULL: none), reply, err
    "vp_request_call_with": (_I, [_S, _P, _S, _P, _OUT, _ERR]),
    "vp_schedule_parse": (_I, [_S, ctypes.c_size_t, _OUT, _ERR]),
    "vp_schedule_load": (_I, [_S, _OUT, _ERR]),
    "vp_schedule_free": (None, [_P]),
    "vp_placement_name": (_S, [_I]),
    "vp_torch_schedule_name": (_S, [_P]),
    "vp_torch_csv_notes": (_I, [_P, ctypes.c_char_p, ctypes.c_size_t]),
    "vp_family_count": (_I, []),
    "vp_family_at": (ctypes.POINTER(_Family), [_I]),
    "vp_arch_preset_count": (_I, []),
    "vp_arch_preset_name": (_S, [_I]),
    "vp_gpu_preset_count": (_I, []),
    "vp_gpu_preset_name": (_S, [_I]),
}


def _candidates(soname: str, env: str, first: List[str]) -> List[str]:
    """Where to look for soname, in order: $env (alone, when set); the paths in first; the
    loader's soname; beside `vpipe` (its prefix's lib*/ and lib*/*/)."""
    if os.environ.get(env):
        return [os.environ[env]]
    found = [path for path in first if os.path.isfile(path)]
    found.append(soname)
    binary = shutil.which("vpipe")
    if binary:
        prefix = os.path.dirname(os.path.dirname(os.path.realpath(binary)))
        found += sorted(glob.glob(os.path.join(prefix, "lib*", soname)))
        found += sorted(glob.glob(os.path.join(prefix, "lib*", "*", soname)))
    return found


def _first_loadable(paths: List[str]) -> Tuple[Optional[ctypes.CDLL], List[str]]:
    """The first of paths that loads, and what each one before it said."""
    tried = []
    for path in paths:
        try:
            return ctypes.CDLL(path), tried
        except OSError as e:
            tried.append(f"{path} ({e})")
    return None, tried


def _open() -> ctypes.CDLL:
    """libvpipe: $VPIPE_LIBRARY, the library inside the package (a wheel built by the
    `wheel` target carries one), the loader's soname, or beside `vpipe`."""
    bundled = os.path.join(os.path.dirname(os.path.abspath(__file__)), SONAME)
    lib, tried = _first_loadable(_candidates(SONAME, "VPIPE_LIBRARY", [bundled]))
    if lib is None:
        raise LibraryNotFound(
            "cannot load libvpipe: set VPIPE_LIBRARY to the path of libvpipe.so, install it "
            "where the loader finds it, or put the installed vpipe binary on PATH; tried "
            + "; ".join(tried))
    for name, (restype, argtypes) in _SIGNATURES.items():
        fn = getattr(lib, name)
        fn.restype, fn.argtypes = restype, argtypes
    return lib


_lock = threading.Lock()
_loaded: Optional[ctypes.CDLL] = None
_runtime: Optional[ctypes.CDLL] = None


def lib() -> ctypes.CDLL:
    """The loaded library (loaded on first use). Raises LibraryNotFound when it cannot be
    loaded."""
    global _loaded
    with _lock:
        if _loaded is None:
            _loaded = _open()
        return _loaded


def cost_reader() -> ctypes.c_void_p:
    """libvpipe-runtime's reader of `vpipe profile` files (vp_profile_cost_reader), for a
    request with "cost_file". The runtime is looked for as $VPIPE_RUNTIME_LIBRARY (alone,
    when set), beside the loaded libvpipe, by the loader's soname, then beside `vpipe`;
    loaded once. Raises UnsupportedError, as the library does for "cost_file" without a
    reader, saying where it looked."""
    global _runtime
    loaded = lib()._name
    with _lock:
        if _runtime is None:
            beside = os.path.join(os.path.dirname(os.path.abspath(loaded)), RUNTIME_SONAME)
            first = [beside] if os.sep in loaded else []
            _runtime, tried = _first_loadable(
                _candidates(RUNTIME_SONAME, "VPIPE_RUNTIME_LIBRARY", first))
            if _runtime is None:
                raise error("VP_EUNSUPPORTED",
                            "option 'cost_file' needs libvpipe-runtime to read the profile, "
                            "and it could not be loaded: set VPIPE_RUNTIME_LIBRARY to the path "
                            "of libvpipe-runtime.so, or install it beside libvpipe; tried "
                            + "; ".join(tried))
        return ctypes.cast(_runtime.vp_profile_cost_reader, ctypes.c_void_p)


def exit_code(status: str) -> int:
    """The command line's exit code for a status name ("VP_EIO": 3)."""
    for code in range(0, -64, -1):
        if lib().vp_status_name(code).decode() == status:
            return lib().vp_status_exit_code(code)
    return 1


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
        raise error(name, err.message.decode("utf-8", "replace"), err.line, err.column,
                    lib().vp_status_exit_code(status))


def text_of(call: Callable[[Any, Any], int]) -> str:
    """Runs call(out, err), which leaves a new C string in out, and returns it as str."""
    out = ctypes.c_void_p()
    check(lambda err: call(ctypes.byref(out), err))
    return take_text(out)
