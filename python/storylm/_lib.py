"""The shared library (libstorylm.so) through ctypes: where it is found, the
signatures of the flat C interface (include/storylm/pyapi.h), and errors.

The library is looked for, in order: $STORYLM_LIBRARY; beside this file (an
installed package: cmake --install or pip); the build tree of a source
checkout (build/libstorylm.so beside python/)."""

import ctypes
import operator
import os
import threading

HERE = os.path.dirname(os.path.abspath(__file__))


class StorylmError(Exception):
    """An error of the library: its message, and a hint saying what to do."""

    def __init__(self, message, hint=""):
        self.message = message
        self.hint = hint
        super().__init__(message + ("\n---> HINT: " + hint if hint else ""))


class Error(ctypes.Structure):
    """include/storylm/error.h's Error."""

    _fields_ = [
        ("message", ctypes.c_char * 1024),
        ("hint", ctypes.c_char * 512),
        ("file", ctypes.c_char_p),
        ("line", ctypes.c_int),
    ]

    def exception(self):
        return StorylmError(self.message.decode("utf-8", "replace"), self.hint.decode("utf-8", "replace"))


# int (*HookFn)(void *ctx, const char *name, float *data, int ndim, const int *shape, int writable)
HOOK_FN = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_char_p, ctypes.POINTER(ctypes.c_float),
                           ctypes.c_int, ctypes.POINTER(ctypes.c_int), ctypes.c_int)


def _candidates():
    env = os.environ.get("STORYLM_LIBRARY")
    if env:
        yield env
    yield os.path.join(HERE, "libstorylm.so")
    yield os.path.join(HERE, "..", "..", "build", "libstorylm.so")


def _find():
    tried = []
    for path in _candidates():
        tried.append(path)
        if os.path.isfile(path):
            return os.path.abspath(path)
    raise StorylmError("cannot find libstorylm.so (looked at " + ", ".join(tried) + ")",
                       "install storylm with cmake --install build (or set STORYLM_LIBRARY to the library's path)")


def _declare(lib):
    P = ctypes.c_void_p
    E = ctypes.POINTER(Error)
    i32p = ctypes.POINTER(ctypes.c_int32)
    sig = {
        "slm_py_load": (P, [ctypes.c_char_p, E]),
        "slm_py_free": (None, [P]),
        "slm_py_release": (None, [P]),
        "slm_py_config_json": (P, [P, E]),
        "slm_py_hook_names": (P, [P, E]),
        "slm_py_tokenize": (ctypes.c_int, [P, ctypes.c_char_p, ctypes.c_size_t, ctypes.POINTER(i32p), E]),
        "slm_py_decode": (P, [P, i32p, ctypes.c_int, E]),
        "slm_py_eos": (ctypes.c_int, [P]),
        "slm_py_vocab": (P, [P, E]),
        "slm_py_run": (ctypes.c_int, [P, i32p, ctypes.c_int, HOOK_FN, P, ctypes.POINTER(ctypes.c_char_p),
                                      ctypes.c_int, ctypes.c_char_p, ctypes.POINTER(ctypes.c_float),
                                      ctypes.POINTER(ctypes.c_double), E]),
        "slm_py_generate": (P, [P, ctypes.c_char_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_double, ctypes.c_int, ctypes.c_double,
                                ctypes.c_uint64, ctypes.c_int, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p,
                                ctypes.c_char_p, E]),
        "slm_py_generate_defaults": (P, [E]),
        "slm_model_threads_setup": (None, [ctypes.c_int]),
    }
    for name, (res, args) in sig.items():
        f = getattr(lib, name)
        f.restype = res
        f.argtypes = args
    return lib


_LIB = None


def lib():
    """The loaded library (loaded once; OpenBLAS is set single-threaded, as the CLI sets it)."""
    global _LIB
    if _LIB is None:
        path = _find()
        try:
            loaded = _declare(ctypes.CDLL(path))
        except OSError as err:
            raise StorylmError("cannot load %s: %s" % (path, err),
                               "build it again (cmake --build build) or install it with cmake --install") from None
        loaded.slm_model_threads_setup(0)
        _LIB = loaded
    return _LIB


def take_string(ptr):
    """A C string the library returned (released here) as str; bytes that
    are not UTF-8 (a file name given as bytes) kept as os.fsdecode keeps them."""
    try:
        return ctypes.string_at(ptr).decode("utf-8", "surrogateescape")
    finally:
        lib().slm_py_release(ptr)


def check_string(ptr, err):
    if not ptr:
        raise err.exception()
    return take_string(ptr)


class Handle:
    """A loaded model (the library's PyModel *) with a count of its users: each
    Model that holds it (storylm.load, copy.copy, copy.deepcopy) and each call
    running on it. It is freed when the count falls to 0, so a Model closed
    while a call on it runs (by a hook, or by another thread) is freed when
    that call returns, never under it; and two Models sharing it free it once."""

    def __init__(self, ptr):
        self._ptr = ptr
        self._lib = lib()  # kept: at interpreter exit the module's globals may be gone before the last drop
        self._users = 1
        self._lock = threading.Lock()

    def share(self):
        """Another user of the handle (a Model, or a call): drop() it when done."""
        with self._lock:
            if not self._users:
                raise closed()
            self._users += 1
        return self._ptr

    def drop(self):
        with self._lock:
            self._users -= 1
            ptr = self._ptr if not self._users else None
            if ptr:
                self._ptr = None
        if ptr:
            self._lib.slm_py_free(ptr)


def closed():
    return StorylmError("the model was closed", "load it again with storylm.load")


def whole(verb, name, value, lo, hi):
    """value as an int in lo..hi (the range of the C type it is passed as, or
    narrower), else a TypeError or OverflowError naming name=value: ctypes
    would wrap it (max_tokens=2**32+3 would run as 3) without a word."""
    try:
        x = operator.index(value)
    except TypeError:
        raise TypeError("%s: %s=%r is not a whole number" % (verb, name, value)) from None
    if not lo <= x <= hi:
        bound = "at most %d" % hi if x > hi else "at least %d" % lo
        raise OverflowError("%s: %s=%d is out of range (%s)" % (verb, name, x, bound))
    return x


INT_MIN, INT_MAX, UINT64_MAX = -2**31, 2**31 - 1, 2**64 - 1


def c_path(verb, name, path):
    """A path (str, bytes or os.PathLike) as the bytes the library opens; one
    holding a NUL byte is refused (ctypes would cut it there and open another file)."""
    try:
        raw = os.fsencode(path)
    except TypeError:
        raise TypeError("%s: %s=%r is not a path (give a str, bytes or pathlib.Path)"
                        % (verb, name, path)) from None
    if b"\0" in raw:
        raise ValueError("%s: %s=%r holds a NUL character" % (verb, name, path))
    return raw
