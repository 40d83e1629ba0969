"""storylm.train: a model trained from a stories file by the C library in
this process (the run `storylm train` makes, one call of the library), so
the model has the bits the CLI gives it for the same options, works with no
storylm program installed, reports its progress as numbers, and a long run
stopped with Ctrl-C (KeyboardInterrupt) saves first, as the CLI's does, and
is resumed with resume=True."""

import ctypes
import json
import os
import re
import shutil
import signal
import sys
import threading
import time

from . import _lib
from ._lib import StorylmError


def program():
    """The storylm executable, for a verb run as a program (train itself runs
    in this process and needs none): $STORYLM_PROGRAM; PREFIX/bin/storylm
    beside an installed package, or the one a pip-installed package carries;
    build/storylm of a source checkout; else storylm on PATH."""
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


# Keywords that are train's own arguments, or the command line's only.
_NOT_OPTIONS = {"out": "give the model file as train's second argument", "o": "give the model file as train's "
                "second argument", "json": "train always asks for the summary", "help": "help(storylm.train) and "
                "storylm train --help list the options", "h": "storylm train --help lists the options"}


def train_params():
    """`storylm train`'s options that train takes by keyword, as the C library's
    table has them (the CLI reads its options with it): {keyword: {"name",
    "type", "help", "default", "min", "max", ...}}."""
    return {k: dict(v) for k, v in _lib.params("train").items()}


# void (*PyTrainEventFn)(void *ctx, int kind, const char *text); int (*PyTrainStopFn)(void *ctx)
_EVENT_FN = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_int, ctypes.c_char_p)
_STOP_FN = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p)
_COUNTS = ("step", "steps", "start_step")  # progress's whole numbers; the others are measures
_PROGRESS, _SAY = 0, 1  # include/storylm/pyapi_train.h
_STOP_SAVING, _STOP_INTERACTIVE = 1, 2  # include/storylm/train_options.h: any stop saves; Ctrl-C's not at once


def _declare():
    lib = _lib.lib()
    f = lib.slm_py_train
    if f.argtypes is None:
        f.restype = ctypes.c_void_p
        f.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, _EVENT_FN, _STOP_FN, ctypes.c_void_p,
                      ctypes.POINTER(_lib.Error)]
    return f


def _in_notebook():
    shell = sys.modules.get("IPython")
    ip = shell.get_ipython() if shell and hasattr(shell, "get_ipython") else None
    return ip is not None and type(ip).__name__ == "ZMQInteractiveShell"


def _duration(s):
    s = int(max(0, s) + 0.5)
    return "%dh%02dm" % (s // 3600, s // 60 % 60) if s >= 3600 else "%dm%02ds" % (s // 60, s % 60) if s >= 60 \
        else "%ds" % s


def _line(info):
    """A step's numbers as the CLI's progress line says them."""
    test = ""
    if info["evaluated"] and info["test_loss"] is not None:
        test = " | test %.4f acc %.1f%%" % (info["test_loss"], 100 * info["test_accuracy"])
        if info["test_loss_per_char"] is not None:
            test += " (%.4f/char)" % info["test_loss_per_char"]
    return "step %5d/%d | loss %.4f%s | %.0f tok/s | %s elapsed, ETA %s" % (
        info["step"], info["steps"], info["loss"], test, info["tokens_per_s"] or 0, _duration(info["elapsed_s"]),
        _duration(info["eta_s"]))


class _Bar:
    """The default progress: tqdm's bar on stderr where tqdm is installed, else
    one line rewritten in place on a terminal and in a notebook (a plain line
    at each evaluation when stderr is a file or a pipe)."""

    def __init__(self):
        self.bar = None
        self.post = {}
        self.last = 0.0
        self.width = 0  # of the line on screen that the next rewrites
        self.inplace = _in_notebook() or (hasattr(sys.stderr, "isatty") and sys.stderr.isatty())
        try:
            from tqdm.auto import tqdm  # a notebook's widget where ipywidgets is, else the text bar
            self.tqdm = tqdm
        except ImportError:
            self.tqdm = None

    def step(self, info):
        if self.tqdm is not None:
            if self.bar is None:
                self.bar = self.tqdm(total=info["steps"], initial=info["start_step"], desc="train", unit="step",
                                     file=sys.stderr, dynamic_ncols=True)
            self.bar.update(info["step"] - self.bar.n)
            self.post["loss"] = "%.4f" % info["loss"]
            if info["evaluated"] and info["test_loss"] is not None:  # kept until the next evaluation
                self.post["test"] = "%.4f" % info["test_loss"]
            self.bar.set_postfix(self.post, refresh=info["evaluated"])
            return
        now = time.monotonic()
        if self.inplace and (info["evaluated"] or now - self.last >= 0.2):
            line = _line(info)
            # padded over the longer line it rewrites; a new line after an evaluation's, which stays
            sys.stderr.write("\r" + line.ljust(self.width) + ("\n" if info["evaluated"] else ""))
            self.width = 0 if info["evaluated"] else len(line)
            self.last = now
        elif info["evaluated"]:
            sys.stderr.write(_line(info) + "\n")
        sys.stderr.flush()

    def say(self, text):
        if self.bar is not None:
            self.bar.write(text, file=sys.stderr)
        else:
            sys.stderr.write(text + "\n")

    def close(self):
        if self.bar is not None:
            self.bar.close()
        elif self.inplace and self.width:  # a step's line is on screen, not yet ended
            sys.stderr.write("\n")


class _Run:
    """One call's callbacks: each step to the bar, each evaluation to
    progress(info), the library's messages (in Python's words) to stderr, and
    a stop asked when Ctrl-C comes (a KeyboardInterrupt raised in progress, or
    SIGINT while the library runs) or progress raises."""

    def __init__(self, progress):
        self.progress = progress
        self.bar = _Bar() if progress is None else None
        self.quiet = progress is False
        self.stop_value = 0
        self.raised = None  # what progress raised, raised again when the run has stopped
        self.event_fn = _EVENT_FN(self._event)
        self.stop_fn = _STOP_FN(self._stop)

    def _event(self, ctx, kind, text):
        try:
            text = text.decode("utf-8", "surrogateescape")
            if kind == _SAY:
                self.say(pythons_words(text))
                return
            info = json.loads(text)
            for key, value in info.items():  # every measure a float (JSON writes 0.0 as 0), None when not measured
                if key not in _COUNTS and isinstance(value, int) and not isinstance(value, bool):
                    info[key] = float(value)
            if self.bar is not None:
                self.bar.step(info)
            elif self.progress and info["evaluated"] and not self.raised:
                self.progress(info)
        except BaseException as err:  # never out of a ctypes callback: it would be printed and lost
            self._ask(err)

    def say(self, text):
        """A message for the user (in Python's words already) on stderr, unless progress=False."""
        if not self.quiet:
            (self.bar.say if self.bar else lambda t: sys.stderr.write(t + "\n"))(text)

    def _ask(self, err):
        if self.raised is None:
            self.raised = err
        self.stop_value = _STOP_INTERACTIVE if isinstance(err, KeyboardInterrupt) else _STOP_SAVING

    def _stop(self, ctx):
        return self.stop_value

    def interrupt(self, signum, frame):
        """SIGINT while the library runs: a stop, then KeyboardInterrupt."""
        self._ask(KeyboardInterrupt())

    def close(self):
        if self.bar is not None:
            self.bar.close()


def train(stories, out, steps=None, progress=None, **options):
    """Trains a model on the stories file into out (a .safetensors path), as
    `storylm train STORIES -o OUT --steps STEPS` (steps left out: as many as
    fit the corpus, at most 3000) with every other option of `storylm train
    --help` given by name (vocab="vocab.txt", threads=2, eval_every=250,
    layers=2, arch="transformer", precision="bf16", cased=True, resume=True,
    ...; from_="tinystories" fine-tunes a trained model, as --from). The
    run is the C library's, in this process: the same bits as the CLI's.

    Each keyword is checked against train's table of parameters in the C
    library (the one the CLI reads its options with): one it does not take,
    or a value of the wrong type, raises storylm.KeywordTypeError (train: no
    option stpes=; did you mean steps=?), one out of range
    storylm.KeywordError, both StorylmErrors.

    progress(info) is called after each evaluation with a dict: step, steps,
    start_step, loss (the last step's), test_loss, test_accuracy,
    test_loss_per_char, ema_test_loss, lr, tokens_per_s, elapsed_s, eta_s,
    saved. Left out: a bar on stderr (tqdm's where installed; in a notebook
    one line updated in place); progress=False: silent. What the run has to
    say (the vocabulary learnt, the stories read) goes to stderr.

    Ctrl-C (KeyboardInterrupt, a notebook's interrupt too, or one raised by
    progress) stops the run after it saved the model, as the CLI's Ctrl-C
    does, then raises KeyboardInterrupt saying so; resume=True continues it.
    Returns the run's summary as a dict (the keys of storylm train --json:
    step, test_loss, model, kept, ...). A failure raises StorylmError once,
    its message and hint in Python's words."""
    # from_="tinystories": a Python keyword's name with "_", the option --from
    options = {(k[:-1] if k.endswith("_") else k): v for k, v in options.items()}
    for key in options:
        if key in _NOT_OPTIONS:
            raise TypeError("train: %s= is not an option of storylm.train; %s" % (key, _NOT_OPTIONS[key]))
    if steps is not None:
        options["steps"] = steps
    said = _shipped(options)
    text = _lib.keywords("train", options).encode("utf-8")
    stories_path, out_path = _lib.c_path("train", "stories", stories), _lib.c_path("train", "out", out)
    run, err = _Run(progress), _lib.Error()
    for line in said:
        run.say(line)
    f = _declare()
    main = threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGINT, run.interrupt) if main else None
    try:
        ptr = f(stories_path, out_path, text, run.event_fn, run.stop_fn, None, ctypes.byref(err))
    finally:
        if main:
            signal.signal(signal.SIGINT, previous)
        run.close()
    if not ptr:
        raise _error(err, options) from None
    result = json.loads(_lib.take_string(ptr))
    summary = result["summary"]
    if run.raised is not None:
        if isinstance(run.raised, KeyboardInterrupt):
            raise KeyboardInterrupt(_stopped(stories, out, summary, result["nothing_saved"]))
        raise run.raised
    return summary


def _shipped(options):
    """from_= and vocab= naming a shipped model or vocabulary, found where the
    package finds its models (the library would look beside the interpreter,
    where the CLI looks beside itself), replaced in options by the file's path;
    what was found, said as the CLI says it."""
    from .model import _data_folders, _shipped_by_name, _source_file
    said = []
    base = options.get("from")
    if isinstance(base, (str, bytes, os.PathLike)) and not os.path.exists(base):
        try:
            options["from"] = _shipped_by_name(base)
        except StorylmError:
            raise StorylmError("train: from_=%r is no model file, nor a shipped model of that name" % base,
                               "give from_= a model file, or a shipped model by its short name: tinystories, "
                               "transformer, window8, layers2, induction, ...") from None
    vocab = options.get("vocab")
    if isinstance(vocab, (str, bytes, os.PathLike)):
        text = os.fsdecode(vocab)
        shipped = text == "shipped"
        # a relative path that is not there, nor its folder (the guide's models/vocab.txt from another folder)
        nowhere = not os.path.isabs(text) and not os.path.exists(text) and not os.path.isdir(os.path.dirname(text)
                                                                                            or ".")
        if shipped or nowhere:
            rel = os.path.join("models", "vocab.txt") if shipped else text
            found = _source_file(rel)
            if found:
                options["vocab"] = found
                said.append("storylm: vocab=%r: the shipped vocabulary %s" % (text, found))
            elif shipped:
                raise StorylmError("train: vocab='shipped': no shipped vocabulary found (looked in %s)"
                                   % ", ".join(os.path.join(p, rel) for p in _data_folders()),
                                   "give vocab= the path of a vocab.txt, or reinstall storylm")
    return said


def _stopped(stories, out, summary, nothing_saved):
    """What a KeyboardInterrupt says: where the model is and how to go on."""
    if nothing_saved:
        return ("training stopped at step %d in its first seconds: nothing saved, so the same call starts afresh"
                % summary["step"])
    return ("training stopped at step %d of %d; %s holds the model (step %s), resumable: storylm.train(%r, %r, ..., "
            "resume=True) continues it" % (summary["step"], summary["steps"], os.fsdecode(out),
                                           (summary.get("kept") or {}).get("step", summary["step"]),
                                           os.fsdecode(stories), os.fsdecode(out)))


def _error(err, options):
    """The library's error as one StorylmError in Python's words: a keyword
    named by the table as keyword=value, any other flag or command in its
    text as Python's keywords and calls."""
    if err.param.kind != _lib.PARAM_NONE:
        return err.exception("train", options)
    message = err.message.decode("utf-8", "replace")
    hint = err.hint.decode("utf-8", "replace")
    return StorylmError(pythons_words(message), pythons_words(hint))


_WORD = r"(?:'[^']*'|[^\s,;()']*[^\s,;()':.])"  # a value's word, without the ':' or '.' after it
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
    return _QUOTED_OR_FLAG.sub(lambda f: f.group(0) if f.group(1) is None else _prose_flag(f), text)


_VALUE_LIKE = re.compile(r"'.*'|[-+]?[0-9][0-9.e+-]*|\S*[./]\S*")  # quoted, a number or a path


def _prose_flag(f):
    """A flag in a sentence: "--seed 3" -> "seed=3", but the word after it is
    the sentence's unless it looks like a value ("only --steps may change" ->
    "only steps= may change")."""
    flag, value = f.group(1), f.group(2)
    if value is None or "=" in f.group(0) or _VALUE_LIKE.fullmatch(value):
        return _keyword(flag, value)
    if _is_bool(flag):
        return _keyword(flag, None) + " " + value
    key = next((k for k, e in _lib.params("train").items() if e.get("name") == flag), flag.replace("-", "_"))
    return "%s= %s" % (key, value)
