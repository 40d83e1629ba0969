"""A PEP 517 build backend for pip install ./python that needs nothing but the
standard library: it zips storylm/*.py and libstorylm.so into a wheel for
this platform. The library is taken from $STORYLM_LIBRARY, else
storylm/libstorylm.so, else ../build/libstorylm.so (the source tree's build),
and with it the storylm program (storylm/bin/storylm, found by storylm.program()).
The source tree's shipped models (models/*.safetensors, models/vocab.txt)
and data/stories.txt (whose names generation capitalises) go in as
storylm/share/, laid out as cmake --install's share/storylm, so the
installed package finds them as the CLI does."""

import base64
import hashlib
import os
import stat
import sysconfig
import zipfile

NAME, VERSION = "storylm", "0.1.0"
HERE = os.path.dirname(os.path.abspath(__file__))
DIST_INFO = "%s-%s.dist-info" % (NAME, VERSION)


def _library():
    env = os.environ.get("STORYLM_LIBRARY")
    places = ([env] if env else []) + [os.path.join(HERE, NAME, "libstorylm.so"),
                                       os.path.join(HERE, "..", "build", "libstorylm.so")]
    for p in places:
        if os.path.isfile(p):
            return p
    raise RuntimeError("storylm: no libstorylm.so at %s: build it first (cmake --build build) or set "
                       "STORYLM_LIBRARY to its path" % ", ".join(places))


def _program():
    """The storylm program the wheel carries: $STORYLM_PROGRAM, else the one
    beside the library taken, else ../build/storylm; None when none is there."""
    env = os.environ.get("STORYLM_PROGRAM")
    places = ([env] if env else []) + [os.path.join(os.path.dirname(_library()), "storylm"),
                                       os.path.join(HERE, "..", "build", "storylm")]
    return next((p for p in places if os.path.isfile(p) and os.access(p, os.X_OK)), None)


def _shipped():
    """(name in the wheel, bytes) of the source tree's shipped models and stories, where they are."""
    source = os.path.join(HERE, "..")
    rels = ["data/stories.txt", "models/vocab.txt"]
    models = os.path.join(source, "models")
    if os.path.isdir(models):
        rels += ["models/" + f for f in sorted(os.listdir(models)) if f.endswith(".safetensors")]
    return [(NAME + "/share/" + rel, open(os.path.join(source, rel), "rb").read())
            for rel in rels if os.path.isfile(os.path.join(source, rel))]


def _tag():
    return "py3-none-" + sysconfig.get_platform().replace("-", "_").replace(".", "_")


def _metadata():
    return ("Metadata-Version: 2.1\nName: %s\nVersion: %s\nSummary: storylm's C library in Python\n"
            "Requires-Python: >=3.9\nRequires-Dist: numpy\n" % (NAME, VERSION)).encode()


def _wheel_file():
    return ("Wheel-Version: 1.0\nGenerator: storylm_wheel\nRoot-Is-Purelib: false\nTag: %s\n" % _tag()).encode()


def _files():
    """(name in the wheel, bytes) of every file but RECORD."""
    pkg = os.path.join(HERE, NAME)
    out = [(NAME + "/" + f, open(os.path.join(pkg, f), "rb").read())
           for f in sorted(os.listdir(pkg)) if f.endswith(".py")]
    out.append((NAME + "/libstorylm.so", open(_library(), "rb").read()))
    program = _program()
    if program:
        out.append((NAME + "/bin/storylm", open(program, "rb").read()))
    out += _shipped()
    out.append((DIST_INFO + "/METADATA", _metadata()))
    out.append((DIST_INFO + "/WHEEL", _wheel_file()))
    return out


def _record_line(name, data):
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return "%s,sha256=%s,%d\n" % (name, digest, len(data))


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    name = "%s-%s-%s.whl" % (NAME, VERSION, _tag())
    files = _files()
    record = "".join(_record_line(n, d) for n, d in files) + DIST_INFO + "/RECORD,,\n"
    with zipfile.ZipFile(os.path.join(wheel_directory, name), "w", zipfile.ZIP_DEFLATED) as z:
        for n, d in files:
            info = zipfile.ZipInfo(n, date_time=(2020, 1, 1, 0, 0, 0))
            # a regular file's type with its mode: pip marks a file executable only then
            info.external_attr = (stat.S_IFREG | (0o755 if n.endswith((".so", "/bin/storylm")) else 0o644)) << 16
            z.writestr(info, d, zipfile.ZIP_DEFLATED)
        z.writestr(DIST_INFO + "/RECORD", record)
    return name


def get_requires_for_build_wheel(config_settings=None):
    return []


def prepare_metadata_for_build_wheel(metadata_directory, config_settings=None):
    path = os.path.join(metadata_directory, DIST_INFO)
    os.makedirs(path, exist_ok=True)
    with open(os.path.join(path, "METADATA"), "wb") as f:
        f.write(_metadata())
    with open(os.path.join(path, "WHEEL"), "wb") as f:
        f.write(_wheel_file())
    return DIST_INFO
