"""storylm.train: a model trained from a stories file by the storylm program
itself (`storylm train ... --json`), so the model has the bits the CLI gives
it for the same options, a long run can be stopped with Ctrl-C (it saves
first, as the CLI does) and resumed, and the interpreter's memory is not
held by the training."""

import json
import os
import shutil
import subprocess
import sys

from . import _lib
from ._lib import StorylmError


def program():
    """The storylm executable: $STORYLM_PROGRAM; PREFIX/bin/storylm beside an
    installed package; build/storylm of a source checkout; else storylm on PATH."""
    env = os.environ.get("STORYLM_PROGRAM")
    places = [env] if env else []
    places += [os.path.join(_lib.HERE, "..", "..", "..", "..", "bin", "storylm"),
               os.path.join(_lib.HERE, "..", "..", "build", "storylm")]
    for p in places:
        if p and os.path.isfile(p) and os.access(p, os.X_OK):
            return os.path.abspath(p)
    found = shutil.which("storylm")
    if found:
        return found
    raise StorylmError("cannot find the storylm program (looked at %s and on PATH)" % ", ".join(places),
                       "install storylm with cmake --install build, or set STORYLM_PROGRAM")


def _flags(options):
    """{"eval_every": 50, "keep_best": True} -> ["--eval-every", "50", "--keep-best"]."""
    out = []
    for key, value in options.items():
        flag = "--" + key.replace("_", "-")
        if value is None or value is False:
            continue
        out += [flag] if value is True else [flag, str(value)]
    return out


def train(stories, out, steps=3000, progress=None, **options):
    """Trains a model on the stories file into out (a .safetensors path), as
    `storylm train STORIES -o OUT --steps STEPS` with every other option of
    `storylm train --help` given by name (vocab="vocab.txt", threads=2,
    eval_every=250, layers=2, arch="window8", resume=True, ...).

    progress(line) is called with each progress line the program prints
    (default: written to stderr). Returns its --json summary as a dict
    (final test loss, steps, model file, ...). A failure raises StorylmError
    with the program's message and hint."""
    if progress is None:
        def progress(line):
            sys.stderr.write(line + "\n")
    cmd = [program(), "train", os.fspath(stories), "-o", os.fspath(out), "--steps", str(steps), "--json"]
    cmd += _flags(options)
    messages = []
    with subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) as proc:
        for line in proc.stderr:  # the summary on stdout is one line, which the pipe holds meanwhile
            line = line.rstrip("\n")
            messages.append(line)
            progress(line)
        result = proc.stdout.read()
    if proc.returncode != 0:
        raise _failure(messages, proc.returncode)
    return json.loads(result)


def _failure(lines, code):
    """The program's "storylm: error: ..." and "---> HINT: ..." lines as a StorylmError."""
    message = next((l.split("error: ", 1)[1] for l in lines if "error: " in l), None)
    hint = next((l.split("HINT: ", 1)[1] for l in lines if "HINT: " in l), "")
    if message is None:
        message = "storylm train stopped with exit code %d%s" % (code, (": " + lines[-1]) if lines else "")
    return StorylmError(message, hint)
