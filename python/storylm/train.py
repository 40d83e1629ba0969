"""storylm.train: a model trained from a stories file by the storylm program
itself (`storylm train ... --json`), so the model has the bits the CLI gives
it for the same options, a long run can be stopped with Ctrl-C (it saves
first, as the CLI does) and resumed, and the interpreter's memory is not
held by the training."""

import json
import os
import re
import shutil
import signal
import subprocess
import sys

from . import _lib
from ._lib import StorylmError


def program():
    """The storylm executable: $STORYLM_PROGRAM; PREFIX/bin/storylm beside an
    installed package, or the one a pip-installed package carries; build/storylm
    of a source checkout; else storylm on PATH."""
    env = os.environ.get("STORYLM_PROGRAM")
    places = [env] if env else []
    places += [os.path.join(_lib.HERE, "..", "..", "..", "..", "bin", "storylm"),
               os.path.join(_lib.HERE, "bin", "storylm"),  # a pip-installed package's own
               os.path.join(_lib.HERE, "..", "..", "build", "storylm")]
    for p in places:
        if p and os.path.isfile(p) and os.access(p, os.X_OK):
            return os.path.abspath(p)
    found = shutil.which("storylm")
    if found:
        return found
    raise StorylmError("cannot find the storylm program (looked at %s and on PATH)" % ", ".join(places),
                       "install storylm with cmake --install build, or set STORYLM_PROGRAM")


# Keywords that are train's own arguments or would stop the program's --json summary.
_NOT_OPTIONS = {"out": "give the model file as train's second argument", "o": "give the model file as train's "
                "second argument", "json": "train always asks for the summary", "help": "help(storylm.train) and "
                "storylm train --help list the options", "h": "storylm train --help lists the options"}


def _value(key, value):
    """An option's value as the program's text: a number, a text or a path."""
    if isinstance(value, (str, bytes, os.PathLike)):
        text = os.fsdecode(value)
    elif isinstance(value, (int, float)):
        text = str(value)
    else:
        raise TypeError("train: %s=%r is not a number, a text or a path" % (key, value))
    if "\0" in text:
        raise ValueError("train: %s=%r holds a NUL character" % (key, value))
    return text


def _flags(options):
    """{"eval_every": 50, "keep_best": True} -> ["--eval-every=50", "--keep-best"]:
    a value joined to its flag by '=', so one starting with '-' is never read
    as another flag."""
    out = []
    for key, value in options.items():
        if value is None or value is False:
            continue
        flag = "--" + key.replace("_", "-")
        out.append(flag if value is True else flag + "=" + _value(key, value))
    return out


def train_params():
    """`storylm train`'s options that train takes by keyword, as the C library's
    table has them (the CLI reads its options with it): {keyword: {"name",
    "type", "help", "default", "min", "max", ...}}."""
    return {k: dict(v) for k, v in _lib.params("train").items()}


def train(stories, out, steps=None, progress=None, **options):
    """Trains a model on the stories file into out (a .safetensors path), as
    `storylm train STORIES -o OUT --steps STEPS` (steps left out: as many as
    fit the corpus, at most 3000, as the program chooses) with every other option of
    `storylm train --help` given by name (vocab="vocab.txt", threads=2,
    eval_every=250, layers=2, arch="window8", resume=True, ...; from_="tinystories"
    fine-tunes a trained model, as --from).

    Each keyword is checked against train's table of parameters in the C
    library (the one the CLI reads its options with) before the program
    runs: one it does not take, or a value of the wrong type, raises
    storylm.KeywordTypeError (train: no option stpes=; did you mean steps=?),
    one out of range storylm.KeywordError (train: seed=1099511627776 is out
    of range (0 to 2147483647)), both StorylmErrors.

    progress(line) is called with each progress line the program prints
    (default: written to stderr). Ctrl-C (KeyboardInterrupt, a notebook's
    interrupt too) stops the program after it saved the model, as the CLI's
    Ctrl-C does, then raises; resume=True continues it. Returns its --json summary as a dict
    (final test loss, steps, model file, ...). A failure raises StorylmError
    with the program's message and hint."""
    # from_="tinystories": a Python keyword's name with "_", the option --from
    options = {(k[:-1] if k.endswith("_") else k): v for k, v in options.items()}
    for key in options:
        if key in _NOT_OPTIONS:
            raise TypeError("train: %s= is not an option of storylm.train; %s" % (key, _NOT_OPTIONS[key]))
    _lib.check_keywords("train", dict(options, steps=steps) if steps is not None else options)
    if progress is None:
        def progress(line):
            sys.stderr.write(line + "\n")
    # the stories after "--": a file named "-s.txt" or "--help" is a file, not a flag
    cmd = [program(), "train", "--out=" + _value("out", out), "--json"]
    if steps is not None:
        cmd.append("--steps=" + _value("steps", steps))
    cmd += _flags(options) + ["--", _value("stories", stories)]
    messages, failing = [], False
    with subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) as proc:
        try:
            for line in proc.stderr:  # the summary on stdout is one line, which the pipe holds meanwhile
                line = line.rstrip("\n")
                messages.append(line)
                failing = failing or line.startswith("storylm: error: ")
                if not failing:  # the error and its hint are raised, once, not printed too
                    progress(line)
        except KeyboardInterrupt:
            _stop(proc)
            raise
        result = proc.stdout.read()
    if proc.returncode != 0:
        raise _failure(messages, proc.returncode)
    try:
        return json.loads(result)
    except ValueError:
        raise StorylmError("storylm train printed no summary: %r" % result[:200],
                           "run %s and see what it prints" % " ".join(cmd)) from None


def _stop(proc):
    """Ctrl-C in Python (a notebook's interrupt reaches the interpreter alone):
    the program is told as a terminal's Ctrl-C tells it, and saves before it
    stops; its last lines are read meanwhile, so it never blocks writing them."""
    proc.send_signal(signal.SIGINT)
    for _ in proc.stderr:
        pass
    proc.wait()


def _failure(lines, code):
    """The program's "storylm: error: ..." and "---> HINT: ..." lines as a
    StorylmError, its flags and commands in Python's words."""
    message = next((l.split("error: ", 1)[1] for l in lines if "error: " in l), None)
    hint = next((l.split("HINT: ", 1)[1] for l in lines if "HINT: " in l), "")
    if message is None:
        message = "storylm train stopped with exit code %d%s" % (code, (": " + lines[-1]) if lines else "")
    return StorylmError(pythons_words(message), pythons_words(hint))


_WORD = r"(?:'[^']*'|[^\s,;()']+)"
_COMMAND = re.compile(r"storylm train (%s)((?: --[a-z][a-z0-9-]*(?:[ =](?!-)%s)?)*)" % (_WORD, _WORD))
_FLAG = re.compile(r"--([a-z][a-z0-9-]*)(?:[ =](?!-)(%s))?" % _WORD)
_QUOTED_OR_FLAG = re.compile(r"'[^']*'|" + _FLAG.pattern)  # a quoted name ('--help.txt') is a name


def _is_bool(flag):
    entry = next((e for e in _lib.params("train").values() if e.get("name") == flag), None)
    return entry is not None and entry.get("type") == "bool"


def _keyword(flag, value):
    """--flag [value] as train's keyword: vocab='v.txt', steps=200, allow_unknown=True
    (a value after a flag that takes none is the text's next word, kept)."""
    key = next((k for k, e in _lib.params("train").items() if e.get("name") == flag), flag.replace("-", "_"))
    if _is_bool(flag) or value is None:
        return "%s=True" % key + (" " + value if value is not None else "")
    value = value[1:-1] if value.startswith("'") else value
    try:
        float(value)
        return "%s=%s" % (key, value)
    except ValueError:
        return "%s=%r" % (key, value)


def pythons_words(text):
    """The program's words in Python's: "storylm train 'S' --vocab v.txt" ->
    "storylm.train('S', OUT, vocab='v.txt')", "--allow-unknown" -> "allow_unknown=True"."""
    def command(m):
        stories = m.group(1)[1:-1] if m.group(1).startswith("'") else m.group(1)
        flags = [_keyword(f.group(1), f.group(2)) for f in _FLAG.finditer(m.group(2))]
        return "storylm.train(%s)" % ", ".join([repr(stories), "OUT"] + flags)

    text = _COMMAND.sub(command, text)
    return _QUOTED_OR_FLAG.sub(lambda f: f.group(0) if f.group(1) is None else _keyword(f.group(1), f.group(2)), text)
