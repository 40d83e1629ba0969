"""The shared library (libstorylm.so) through ctypes: where it is found, the
signatures of the flat C interface (include/storylm/pyapi.h), and errors.

The library is looked for, in order: $STORYLM_LIBRARY; beside this file (an
installed package: cmake --install or pip); the build tree of a source
checkout (build/libstorylm.so beside python/)."""

import ctypes
import json
import numbers
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


class KeywordError(StorylmError, ValueError):
    """A keyword's value the verb's table refuses (out of its range, not one of
    its choices): generate: temperature=200 is out of range (0 to 100)."""


class KeywordTypeError(StorylmError, TypeError):
    """A keyword the verb does not take, or a value of the wrong type."""


# include/storylm/error.h's ErrorParamKind
PARAM_NONE, PARAM_VALUE, PARAM_TYPE, PARAM_UNKNOWN, PARAM_MISSING, PARAM_TOO_LONG = range(6)


class ErrorParam(ctypes.Structure):
    """include/storylm/error.h's ErrorParam: the parameter an error names."""

    _fields_ = [
        ("kind", ctypes.c_int),
        ("name", ctypes.c_char * 48),
        ("key", ctypes.c_char * 48),
        ("value", ctypes.c_char * 96),
        ("near", ctypes.c_char * 48),
        ("has_value", ctypes.c_ubyte),
        ("text", ctypes.c_ubyte),
        ("positional", ctypes.c_ubyte),
    ]


class Error(ctypes.Structure):
    """include/storylm/error.h's Error."""

    _fields_ = [
        ("message", ctypes.c_char * 1024),
        ("hint", ctypes.c_char * 512),
        ("file", ctypes.c_char_p),
        ("line", ctypes.c_int),
        ("param", ErrorParam),
    ]

    def exception(self, verb=None, given=None):
        """The error as a StorylmError; one that names a keyword says it in
        Python's words, its value as given (given: the keywords passed) and
        the verb first: "generate: temperature=200 is out of range (0 to 100)"."""
        message = self.message.decode("utf-8", "replace")
        hint = self.hint.decode("utf-8", "replace")
        p = self.param
        if p.kind == PARAM_NONE:
            return StorylmError(message, hint)
        key = p.key.decode("utf-8", "replace")
        if given is not None and key in given:
            value = repr(given[key])
        else:
            raw = p.value.decode("utf-8", "replace")
            value = repr(raw) if p.text else raw
        prefix = verb + ": " if verb else ""
        if p.kind == PARAM_UNKNOWN:
            near = p.near.decode("utf-8", "replace")
            return KeywordTypeError(prefix + "no option %s=%s" % (key, "; did you mean %s=?" % near if near else ""),
                                    hint or ("storylm.%s_params() lists %s's keywords" % (verb, verb) if verb else ""))
        if p.kind == PARAM_MISSING:
            return KeywordTypeError(prefix + "%s= is missing" % key, hint)
        cls = KeywordTypeError if p.kind == PARAM_TYPE else KeywordError
        # a message that starts with ':' follows the value (error.h): "ablate=[3, 12]: head 12 is out of range"
        return cls(prefix + "%s=%s%s%s" % (key, value, "" if message.startswith(":") else " ", message), hint)


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
        "slm_py_set_kernels": (ctypes.c_int, [P, ctypes.c_char_p, E]),
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
        "slm_py_generate": (P, [P, ctypes.c_char_p, ctypes.c_size_t, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p,
                                E]),
        "slm_py_generate_json": (P, [P, ctypes.c_char_p, ctypes.c_size_t, ctypes.c_char_p, ctypes.c_int,
                                     ctypes.c_char_p, ctypes.c_char_p, E]),
        "slm_py_generate_hooked": (P, [P, ctypes.c_char_p, ctypes.c_size_t, ctypes.c_char_p, ctypes.c_int, HOOK_FN,
                                       P, ctypes.POINTER(ctypes.c_char_p), ctypes.c_int, ctypes.c_char_p,
                                       ctypes.c_char_p, E]),
        "slm_py_generate_defaults": (P, [E]),
        "slm_py_params_json": (P, [ctypes.c_char_p, E]),
        "slm_py_params_check": (ctypes.c_int, [ctypes.c_char_p, ctypes.c_char_p, E]),
        "slm_py_tensors_json": (P, [P, E]),
        "slm_py_params": (P, [P, ctypes.POINTER(ctypes.c_size_t)]),
        "slm_py_with_params": (P, [P, ctypes.POINTER(ctypes.c_float), ctypes.c_size_t, E]),
        "slm_py_save": (ctypes.c_int, [P, ctypes.c_char_p, E]),
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


_PARAMS = {}


def params(verb):
    """verb's parameters that Python gives by keyword, from the library's one
    table (the command line's options): {keyword: {"name", "type", "min",
    "max", "default", "choices", "help", ...}}."""
    if verb not in _PARAMS:
        err = Error()
        described = json.loads(check_string(lib().slm_py_params_json(verb.encode(), ctypes.byref(err)), err))
        _PARAMS[verb] = {p["key"]: p for p in described}
    return _PARAMS[verb]


def _typed(verb, key, value, kind):
    """value as the JSON its parameter's type takes, or KeywordTypeError naming
    key=value: a whole number (operator.index: numpy's too, never a bool or
    2.5), a number, true or false, a text (a path: str, bytes or os.PathLike),
    a list of texts, or heads (a head number, a name "2:3", a text "1:3,2:5" or
    a list of numbers and names, read by the library as --ablate is). A text
    holding a NUL raises ValueError (JSON would keep it, the library's strings
    end there)."""
    prefix = verb + ": " if verb else ""

    def wrong(what):
        return KeywordTypeError("%s%s=%r is not %s" % (prefix, key, value, what))

    if kind == "heads":
        items = [value] if isinstance(value, (str, numbers.Integral)) else value
        if not isinstance(items, (list, tuple)) or not items:
            raise wrong('a head or a list of heads (3, "2:3", "1:3,2:5" or [3, "2:5"])')
        out = []
        for h in items:
            if isinstance(h, bool) or not isinstance(h, (str, numbers.Integral)):
                raise wrong('a head or a list of heads (3, "2:3", "1:3,2:5" or [3, "2:5"])')
            if isinstance(h, str) and "\0" in h:
                raise ValueError("%s%s=%r holds a NUL character" % (prefix, key, value))
            out.append(h if isinstance(h, str) else operator.index(h))
        return out if isinstance(value, (list, tuple)) else out[0]
    if kind == "bool":
        if not isinstance(value, bool):
            raise KeywordTypeError("%s: %s=%r: give %s=True, or leave it out" % (verb, key, value, key))
        return value
    if kind in ("int", "number"):
        if isinstance(value, bool) or not isinstance(value, numbers.Real):
            raise wrong("a whole number" if kind == "int" else "a number")
        if kind == "int":
            try:
                return operator.index(value)
            except TypeError:
                raise wrong("a whole number") from None
        return float(value)
    texts = [value] if kind == "string" or isinstance(value, (str, bytes, os.PathLike)) else value
    if kind == "strings" and not isinstance(texts, (list, tuple)):
        raise wrong("a text or a list of texts")
    out = []
    for t in texts:
        if not isinstance(t, (str, bytes, os.PathLike)):
            raise wrong("a text" if kind == "string" else "a text or a list of texts")
        t = os.fsdecode(t)
        if "\0" in t:
            raise ValueError("%s%s=%r holds a NUL character" % (prefix, key, value))
        out.append(t)
    return out[0] if kind == "string" else out


def heads_text(verb, key, value):
    """Heads given by keyword (key=value, as _typed takes them) as the text the
    library reads ("3,2:5"), or None for None."""
    if value is None:
        return None
    typed = _typed(verb, key, value, "heads")
    return ",".join(str(h) for h in (typed if isinstance(typed, list) else [typed])).encode("utf-8")


def keywords(verb, options):
    """options (keyword -> value; None left out) as the JSON text of verb's
    parameters, each value of its type; a keyword the verb does not take is
    left for the library to refuse, with the nearest one."""
    table = params(verb)
    out = {}
    for key, value in options.items():
        if value is None:
            continue
        out[key] = _typed(verb, key, value, table[key]["type"]) if key in table else value
    return json.dumps(out)


def check_keywords(verb, options):
    """options checked against verb's table by the library (names, types,
    ranges), the first it refuses raised in Python's words."""
    err = Error()
    if lib().slm_py_params_check(verb.encode(), keywords(verb, options).encode(), ctypes.byref(err)):
        raise err.exception(verb, options)


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
