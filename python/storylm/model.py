"""A loaded model: tokens, logits, loss, the activation cache and hooks, and
generation, each a call into the C library (the forward pass runs in C; hooks
are called by it between its parts)."""

import contextlib
import copy
import ctypes
import json
import numbers
import operator
import os
import threading

import numpy as np

from . import _lib, views, weights
from ._lib import StorylmError
from .cache import ActivationCache


class Config(dict):
    """The model's configuration as `storylm info --json` gives it (arch, pos,
    score, parameters, vocab_size, row_dim, n_heads, key_dim, value_dim,
    window, hidden_dim, context, layers, tie_embeddings: True where W_U is
    W_E.T and the file has no unembed.W_U), readable as keys or attributes, with
    TransformerLens's names beside them (d_model, n_layers, d_head, d_vocab,
    n_ctx, d_mlp)."""

    def __getattr__(self, name):
        try:
            return self[name]
        except KeyError:
            raise AttributeError(name) from None


class Tokenizer:
    """The model's WordPiece tokenizer (its vocabulary is stored in the model
    file): vocab[id] is the piece of id ("##ark" continues a word)."""

    def __init__(self, model):
        self._model = model
        err = _lib.Error()
        with model._use() as h:
            self.eos_id = _lib.lib().slm_py_eos(h)
            self.vocab = _lib.check_string(_lib.lib().slm_py_vocab(h, ctypes.byref(err)), err).split("\n")
        if self.vocab and self.vocab[-1] == "":
            self.vocab.pop()

    def encode(self, text):
        """text -> token ids (no [EOS]), as `storylm tokenize` gives them."""
        return self._model.tokenize(text)

    def decode(self, ids):
        return self._model.decode(ids)


class HookPoint:
    """What a hook function gets as its second argument: the hook's name (and layer)."""

    def __init__(self, name, row=None):
        self.name = name
        self.row = row  # the row of a batch this call is for (a batch runs row by row); None for one text

    def layer(self):
        """The layer of a blocks.{l}.… hook, else None."""
        parts = self.name.split(".")
        return int(parts[1]) if parts[0] == "blocks" else None

    def __repr__(self):
        return "HookPoint(%r)" % self.name


class _HookRun:
    """One forward pass's hooks: the user's functions by name, the cache to
    fill, and the first exception a hook raised (re-raised after the pass)."""

    def __init__(self, hooks, cache, cache_names, row=None):
        self.row = row
        self.hooks = hooks
        self.cache = cache
        self.cache_names = cache_names
        self.exception = None
        self.callback = _lib.HOOK_FN(self._call)

    def _call(self, ctx, name, data, ndim, shape, writable):
        try:
            name = name.decode()
            view = np.ctypeslib.as_array(data, shape=tuple(shape[i] for i in range(ndim)))
            changed = False
            for fn in self.hooks.get(name, ()):
                x = view.copy()  # the hook's own array: the C buffer is reused once the pass goes on
                out = fn(x, HookPoint(name, self.row))
                result = x if out is None else np.asarray(out)
                if result.shape != view.shape:
                    raise ValueError("hook %s returned an array of shape %s; the pass needs %s"
                                     % (name, result.shape, view.shape))
                result = result.astype(np.float32, copy=False)
                if not np.array_equal(result.view(np.uint32), view.view(np.uint32)):
                    view[...] = result
                    changed = True
            if self.cache is not None and name in self.cache_names:
                self.cache[name] = view.copy()
            return 1 if changed else 0
        except BaseException as exc:  # re-raised after the pass: ctypes would only print it
            self.exception = exc
            return -1


def _kernels_name(kernels):
    """load's kernels= as the bytes the library reads (a str without NUL)."""
    if not isinstance(kernels, str) or "\0" in kernels:
        raise TypeError('load: kernels=%r is not "blas" or "portable"' % (kernels,))
    return kernels.encode()


class Model:
    """A storylm model file loaded through the library (storylm.load). A path
    may be a str, bytes or os.PathLike; kernels: storylm.load's."""

    def __init__(self, path=None, kernels=None):
        self._handle = None  # a _lib.Handle, shared with copies; None once closed
        self._lock = threading.Lock()
        kernels = _kernels_name(kernels) if kernels is not None else None
        err = _lib.Error()
        ptr = _lib.lib().slm_py_load(_lib.c_path("load", "path", path) if path is not None else None,
                                     ctypes.byref(err))
        if not ptr:
            raise err.exception()
        self._handle = _lib.Handle(ptr)
        with self._use() as h:
            if kernels is not None and _lib.lib().slm_py_set_kernels(h, kernels, ctypes.byref(err)):
                self.close()
                raise err.exception()
            self.cfg = Config(json.loads(_lib.check_string(_lib.lib().slm_py_config_json(h, ctypes.byref(err)), err)))
            names = _lib.check_string(_lib.lib().slm_py_hook_names(h, ctypes.byref(err)), err)
        c = self.cfg
        c.update(d_model=c["row_dim"], n_layers=c.get("layers", 1), d_head=c["key_dim"], d_vocab=c["vocab_size"],
                 n_ctx=c["window"], d_mlp=c["hidden_dim"])
        self.path = c["file"]
        self.hook_names = names.split("\n") if names else []
        self.tokenizer = Tokenizer(self)

    def close(self):
        """Lets go of the model: its memory is freed now, or when the calls
        running on it return (a hook, or another thread, may close it), and
        only when every copy (copy.copy, copy.deepcopy) is closed too. Later
        calls on this Model raise StorylmError."""
        lock = getattr(self, "_lock", None)  # None: __init__ failed before it
        if lock is None:
            return
        self.__dict__.pop("_weights_of", None)  # its arrays hold the weights too; the caller's own still may
        with lock:
            handle, self._handle = self._handle, None
        if handle is not None:
            handle.drop()

    def __del__(self):
        self.close()

    @contextlib.contextmanager
    def _use(self):
        """The library's model for one call, counted as a user of the handle,
        so a close meanwhile frees it only once the call has returned."""
        handle = self._handle
        if handle is None:
            raise _lib.closed()
        ptr = handle.share()  # raises when the last user dropped it meanwhile
        try:
            yield ptr
        finally:
            handle.drop()

    def __copy__(self):
        return self._copy(None)

    def __deepcopy__(self, memo):
        return self._copy(memo)

    def _copy(self, memo):
        """Another Model on the same loaded weights, which Python never
        changes: the handle is shared and counted, so each copy closes on its
        own and the weights are freed once. memo: deepcopy's (cfg, names and
        vocabulary copied too), or None for a shallow copy."""
        new = Model.__new__(Model)
        new._handle, new._lock = None, threading.Lock()  # closed until it shares the handle
        if memo is not None:
            memo[id(self)] = new  # the tokenizer's model is the copy
        state = {k: v for k, v in self.__dict__.items() if k not in ("_handle", "_lock", "tokenizer", "_weights_of")}
        new.__dict__.update(copy.deepcopy(state, memo) if memo is not None else state)
        new.tokenizer = copy.copy(self.tokenizer)
        new.tokenizer._model = new
        if memo is not None:
            new.tokenizer.vocab = copy.deepcopy(self.tokenizer.vocab, memo)
        with self._lock:
            if self._handle is None:
                raise _lib.closed()
            self._handle.share()
            new._handle = self._handle
        return new

    def __reduce_ex__(self, protocol):
        # The weights live in the library's memory, which pickle cannot carry to another process.
        raise TypeError("a storylm.Model cannot be pickled: its weights are held by the C library; "
                        "save it (model.save(PATH)) and storylm.load(PATH) there, or copy.copy it "
                        "within this process")

    def __repr__(self):
        return "storylm.Model(%r, arch=%s, layers=%s)" % (self.path, self.cfg.arch, self.cfg.n_layers)

    # ---- weights ----------------------------------------------------------------

    def _weights(self):
        """(tensor table, flat parameters, state dict, TransformerLens's names) of
        the loaded weights, made once for each (load_state_dict loads others)."""
        handle = self._handle
        if handle is None:
            raise _lib.closed()
        cached = self.__dict__.get("_weights_of")
        if cached is None or cached[0] is not handle:
            ptr = handle.share()
            try:
                table = weights.tensor_table(ptr)
            finally:
                handle.drop()
            flat = weights.flat_params(handle)
            sd = weights.state_dict(table, flat)
            cached = (handle, table, flat, sd, weights.lens_names(self.cfg.arch, sd, self.cfg.n_layers))
            self._weights_of = cached
        return cached[1:]

    def state_dict(self):
        """{the file's tensor name: np.float32 array shaped as the file holds it}:
        read-only views of the loaded weights (copy one to change it, then
        load_state_dict). The keys are `storylm info`'s tensors, in its order."""
        return dict(self._weights()[2])

    def load_state_dict(self, state_dict, strict=True):
        """Loads changed weights: each name of state_dict one of state_dict()'s,
        each array its shape (any float or int type, stored as float32);
        strict=False keeps the tensors not given. The model then runs with the
        new weights (model.save writes them as a model file the CLI reads);
        copies made before, and arrays read before, keep the old ones. A number
        that is not finite raises StorylmError naming its tensor."""
        table, flat, _, _ = self._weights()
        new = weights.changed_params(table, flat, state_dict, strict)
        err = _lib.Error()
        with self._use() as h:
            ptr = _lib.lib().slm_py_with_params(h, new.ctypes.data_as(ctypes.POINTER(ctypes.c_float)), new.size,
                                                ctypes.byref(err))
        if not ptr:
            raise err.exception()
        self.__dict__.pop("_weights_of", None)
        with self._lock:
            old, self._handle = self._handle, _lib.Handle(ptr)
        if old is not None:
            old.drop()

    def save(self, path):
        """Writes the model (its weights as loaded or as load_state_dict changed
        them, its vocabulary and metadata) as a model file at path."""
        err = _lib.Error()
        raw = _lib.c_path("save", "path", path)
        with self._use() as h:
            if _lib.lib().slm_py_save(h, raw, ctypes.byref(err)):
                raise err.exception()

    # ---- tokens -----------------------------------------------------------------

    def tokenize(self, text):
        """text -> np.int32 ids (without [EOS]), as `storylm tokenize --json` gives
        them; a list of texts -> a list of those."""
        if _batch_of(text) is not None:
            return [self.tokenize(t) for t in _batch_of(text)]
        err = _lib.Error()
        ptr = ctypes.POINTER(ctypes.c_int32)()
        raw = _text(text)
        with self._use() as h:  # the length goes with it: a NUL byte is refused, not the end of the text
            n = _lib.lib().slm_py_tokenize(h, raw, len(raw), ctypes.byref(ptr), ctypes.byref(err))
        if n < 0:
            raise err.exception()
        try:
            return np.ctypeslib.as_array(ptr, shape=(n,)).copy() if n else np.zeros(0, np.int32)
        finally:
            _lib.lib().slm_py_release(ptr)

    def to_ids(self, text_or_ids):
        """What the model runs: [EOS] + tokenize(text) for a str; ids (a sequence or
        array of ints, [EOS] first by convention) as given. A batch (a list of
        texts or of id sequences, or a [batch, pos] array) -> a list of those."""
        if _batch_of(text_or_ids) is not None:
            return [self._row_ids(x) for x in _batch_of(text_or_ids)]
        return self._row_ids(text_or_ids)

    def _row_ids(self, text_or_ids):
        """One row's ids: [EOS] + the text's, or ids as given (a 1-D sequence)."""
        if isinstance(text_or_ids, str):
            return np.concatenate([[self.tokenizer.eos_id], self.tokenize(text_or_ids)]).astype(np.int32)
        return self._token_ids(text_or_ids, "expected a text or a 1-D sequence of token ids")

    def to_tokens(self, texts):
        """A batch as one [batch, pos] np.int32 array: each row to_ids's, shorter
        rows padded on the right with [EOS] (attention_mask says where the
        tokens are). To run ragged texts, give the texts themselves: each row
        then runs at its own length."""
        rows = self.to_ids(texts if _batch_of(texts) is not None else [texts])
        out = np.full((len(rows), max(len(r) for r in rows)), self.tokenizer.eos_id, np.int32)
        for i, r in enumerate(rows):
            out[i, :len(r)] = r
        return out

    def attention_mask(self, texts):
        """[batch, pos] np.int64: 1 where a row of the batch has a token, 0 on the
        right of a shorter row, where a batch's logits and cache hold 0."""
        rows = self.to_ids(texts if _batch_of(texts) is not None else [texts])
        out = np.zeros((len(rows), max(len(r) for r in rows)), np.int64)
        for i, r in enumerate(rows):
            out[i, :len(r)] = 1
        return out

    def _token_ids(self, ids, expected):
        """ids (a sequence or array of ints) as np.int32, each checked to be a
        token id first: a cast alone would wrap 2**32 + 5 to 5."""
        try:
            arr = np.asarray(ids)
        except ValueError:  # a mixture numpy cannot make one array of (a text and ids)
            arr = np.asarray(ids, dtype=object)
        if arr.ndim == 1 and arr.size == 0:
            return np.zeros(0, np.int32)
        integral = np.issubdtype(arr.dtype, np.integer) or (
            arr.dtype == object and all(isinstance(i, numbers.Integral) for i in arr.flat))  # ints past int64
        if arr.ndim != 1 or not integral:
            raise StorylmError("%s, got an array of shape %s and type %s" % (expected, arr.shape, arr.dtype),
                               "give a text, ids, a list of texts or of ids, or a [batch, pos] array")
        for bad in arr[(arr < 0) | (arr >= self.cfg.vocab_size)][:1]:
            raise StorylmError("token id %d is out of range: ids lie in 0..%d" % (bad, self.cfg.vocab_size - 1),
                               "encode the text with this model's tokenize")
        return np.ascontiguousarray(arr, dtype=np.int32)

    def to_str_tokens(self, text_or_ids):
        """The pieces the model runs, as text: ["[EOS]", "lily", "found", "z", "##ark", ...]
        (a batch: a list of those)."""
        if _batch_of(text_or_ids) is not None:
            return [[self.tokenizer.vocab[i] for i in row] for row in self.to_ids(text_or_ids)]
        return [self.tokenizer.vocab[i] for i in self.to_ids(text_or_ids)]

    def decode(self, ids):
        """ids -> text (pieces joined, [EOS] left out), as the library decodes;
        a list of id sequences or a [batch, pos] array -> a list of texts."""
        if _batch_of(ids) is not None:
            return [self._decode_row(x) for x in _batch_of(ids)]
        return self._decode_row(ids)

    def _decode_row(self, ids):
        ids = self._token_ids(ids, "expected a 1-D sequence of token ids")
        err = _lib.Error()
        with self._use() as h:
            ptr = _lib.lib().slm_py_decode(h, ids.ctypes.data_as(ctypes.POINTER(ctypes.c_int32)), int(ids.size),
                                           ctypes.byref(err))
        return _lib.check_string(ptr, err)

    # ---- the forward pass ------------------------------------------------------

    def _check_names(self, names):
        unknown = [n for n in names if n not in self.hook_names]
        if unknown:
            raise StorylmError("unknown hook name %s" % ", ".join(map(repr, unknown)),
                               "the hook names of this model are in model.hook_names: " + ", ".join(self.hook_names))

    def _hooks_by_name(self, fwd_hooks):
        hooks = {}
        for entry in fwd_hooks or ():
            name, fn = entry
            if not callable(fn):
                raise StorylmError("the hook on %r is not a function" % name, "give (name, fn) pairs, fn(array, hook)")
            for n in [n for n in self.hook_names if name(n)] if callable(name) else [name]:
                hooks.setdefault(n, []).append(fn)
        return hooks

    def _run(self, text_or_ids, fwd_hooks=None, cache_names=None, logits=True, ablate=None):
        """The pass in C -> (logits or None, loss, cache or None): for one text
        logits [T, V], the loss a float and the cache's arrays unbatched; for a
        batch, each row run on its own (so its numbers are the single call's)
        and put together: logits [B, T, V] and the cache's arrays with a batch
        axis, padded with 0 on the right of shorter rows, the losses [B]."""
        rows = _batch_of(text_or_ids)
        if rows is None:
            return self._run_row(self._row_ids(text_or_ids), fwd_hooks, cache_names, logits, ablate, None)
        if not rows:
            raise StorylmError("nothing to run: an empty batch", "give at least one text")
        ids = [self._row_ids(r) for r in rows]
        runs = [self._run_row(x, fwd_hooks, cache_names, logits, ablate, i) for i, x in enumerate(ids)]
        out = _padded([r[0] for r in runs], (0,)) if logits else None
        cache = None
        if cache_names is not None:
            cache = {n: _padded([r[2][n] for r in runs], _position_axes(n)) for n in runs[0][2]}
        return out, np.array([r[1] for r in runs]), cache

    def _run_row(self, ids, fwd_hooks, cache_names, logits, ablate, row):
        """One row's pass in C -> (logits [T, V] or None, loss, cache or None)."""
        if ids.size == 0:
            raise StorylmError("nothing to run: no token", "give a text or at least one id")
        hooks = self._hooks_by_name(fwd_hooks)
        cache = {} if cache_names is not None else None
        wanted = list(dict.fromkeys(list(hooks) + list(cache_names or ())))
        self._check_names(wanted)
        run = _HookRun(hooks, cache, set(cache_names or ()), row)
        names = (ctypes.c_char_p * max(1, len(wanted)))(*[n.encode() for n in wanted])
        out = np.empty((ids.size, self.cfg.vocab_size), np.float32) if logits else None
        loss = ctypes.c_double()
        err = _lib.Error()
        heads = _lib.heads_text(None, "ablate", ablate)
        with self._use() as h:  # a hook may close the model: it is freed after the pass, not under it
            rc = _lib.lib().slm_py_run(h, ids.ctypes.data_as(ctypes.POINTER(ctypes.c_int32)), int(ids.size),
                                       run.callback if wanted else _lib.HOOK_FN(), None, names, len(wanted), heads,
                                       out.ctypes.data_as(ctypes.POINTER(ctypes.c_float)) if logits else None,
                                       ctypes.byref(loss), ctypes.byref(err))
        if run.exception is not None:
            raise run.exception
        if rc:
            raise err.exception(None, {"ablate": ablate})
        return out, loss.value, cache

    def __call__(self, text_or_ids, fwd_hooks=None, ablate=None):
        """Logits np.float32 [T, V]: row t predicts token t+1 (T = [EOS] + the text's tokens);
        a batch (a list of texts or of ids, or a [batch, pos] array): [B, T, V],
        shorter rows padded with 0 on the right (attention_mask).
        ablate: heads switched off (their output 0), named as the CLI's --ablate names
        them: 3, "2:3" (layer 2's head 3), "1:3,2:5" or a list [3, "2:5"]."""
        return self._run(text_or_ids, fwd_hooks, ablate=ablate)[0]

    def loss(self, text_or_ids, fwd_hooks=None, ablate=None):
        """The mean loss in nats over the predicted positions, as `storylm eval --text TEXT --json`
        (a batch: np.float64 [B], each row's own; ablate: as for model(...))."""
        return self._run(text_or_ids, fwd_hooks, logits=False, ablate=ablate)[1]

    def loss_per_char(self, text, fwd_hooks=None, ablate=None):
        """The loss in nats per character of a text (per byte of its UTF-8, as
        typed, before the tokenizer lower-cases it), as `storylm eval --text
        TEXT --json`'s loss_per_char: comparable across vocabularies (a batch
        of texts: np.float64 [B]). Divide by log(2) for bits."""
        rows = _batch_of(text)
        texts = rows if rows is not None else [text]
        if not all(isinstance(t, str) for t in texts):
            raise StorylmError("loss per character needs a text, not token ids", "give the text itself")
        losses = np.atleast_1d(self.loss(text, fwd_hooks=fwd_hooks, ablate=ablate))
        nats = [loss * (len(self._row_ids(t)) - 1) / max(1, len(t.encode("utf-8"))) for loss, t in zip(losses, texts)]
        return np.array(nats) if rows is not None else float(nats[0])

    def run_with_cache(self, text_or_ids, names_filter=None, fwd_hooks=None, ablate=None):
        """(logits [T, V], cache): the cache an ActivationCache (a dict) of
        np.float32 arrays under the hook names (model.hook_names; docs/python.md
        lists their shapes), each as the rest of the pass read it; a batch gives
        them a batch axis first, as TransformerLens's. names_filter: a name, a
        list of names or a function name -> bool, to keep only some (ablate: as
        for model(...))."""
        if names_filter is None:
            names = list(self.hook_names)
        elif isinstance(names_filter, str):
            names = [names_filter]
        elif callable(names_filter):
            names = [n for n in self.hook_names if names_filter(n)]
        else:
            names = list(names_filter)
        logits, _, cache = self._run(text_or_ids, fwd_hooks, cache_names=names, ablate=ablate)
        return logits, ActivationCache(cache, self, _batch_of(text_or_ids) is not None)

    def run_with_hooks(self, text_or_ids, fwd_hooks=(), return_type="logits", ablate=None):
        """The pass with fwd_hooks = [(hook name, fn)] (or a function name -> bool
        for the name, as TransformerLens takes it): fn(array, hook) sees the
        part's numbers (a copy) and may change them in place or return a new
        array of the same shape; the rest of the pass reads the result. A batch
        runs row by row: fn sees one row's array (no batch axis) and hook.row
        says which. return_type: "logits", "loss" or "both" ((logits, loss));
        ablate: as for model(...)."""
        if return_type not in ("logits", "loss", "both"):
            raise StorylmError("return_type %r" % (return_type,), 'give "logits", "loss" or "both"')
        logits, loss, _ = self._run(text_or_ids, fwd_hooks, logits=return_type != "loss", ablate=ablate)
        return {"logits": logits, "loss": loss, "both": (logits, loss)}[return_type]

    def attention_view(self, text_or_ids, layer=0, ablate=None):
        """Layer's attention patterns on one text as an AttentionView: Jupyter
        shows it inline (hover a token to see where it reads; a button a head),
        self-contained HTML with no script from the network; .save(path) writes
        a page."""
        return views.attention(self, text_or_ids, layer, ablate)

    # ---- generation ---------------------------------------------------------------

    def generate(self, prompt="", max_tokens=None, temperature=None, top_k=None, top_p=None, seed=None, samples=1,
                 stories=None, precision="fp32", logprobs=False, n_probs=None, fwd_hooks=None, **options):
        """`storylm generate`'s text: the prompt as typed and the story written on
        (names capitalised as the CLI does; stories as its --stories). One str, or
        a list of samples strs when samples > 1 (sample i drawn with seed + i).
        Each keyword is one of `storylm generate`'s options, read with its table
        (its type, range and default: storylm.generate_params()): max_tokens
        (--tokens; max_new_tokens, TransformerLens's name, too), temperature, top_k, top_p, and in options min_p,
        repeat_penalty, repeat_last_n, stop (a text or a list of texts) and ablate
        (heads switched off, their output 0, as for model(...) and the CLI's
        --ablate); one left None takes the CLI's default. seed None (or -1, as the CLI's --seed
        -1) draws one at random, kept in model.last_seed. precision "bf16" runs
        the products in BF16, as the CLI's --precision bf16 (a CPU with
        avx512_bf16). stories may be a str, bytes or os.PathLike. A value the
        table refuses raises storylm.KeywordError naming it in Python's words
        (generate: temperature=200 is out of range (0 to 100)); a keyword
        generate does not take or a value of the wrong type, KeywordTypeError.

        logprobs=True or n_probs=K (0 to 20, as --n-probs) gives instead the
        run as `storylm generate --json` gives it (a dict: "samples", each with
        "text" and "tokens" with their "logprob" and K "top_logprobs").
        fwd_hooks (as run_with_hooks takes them): each token is drawn from a
        whole pass over the story so far with the hooks (a hook sees [T, ...]
        of T positions, one more each step), not from the generator's pass of
        one position, which agrees with it to float rounding. A list of prompts
        gives a list, one answer a prompt."""
        if "max_new_tokens" in options:  # TransformerLens's name for it
            if max_tokens is not None:
                raise TypeError("generate: max_tokens= and max_new_tokens= (TransformerLens's name) are the same "
                                "option; give one")
            max_tokens = options.pop("max_new_tokens")
        if _batch_of(prompt) is not None:
            return [self.generate(p, max_tokens, temperature, top_k, top_p, seed, samples, stories, precision,
                                  logprobs, n_probs, fwd_hooks, **options) for p in _batch_of(prompt)]
        given = dict(options, max_tokens=max_tokens, temperature=temperature, top_k=top_k, top_p=top_p, seed=seed,
                     samples=samples, precision=precision)
        if seed is None or (isinstance(seed, numbers.Integral) and not isinstance(seed, bool) and seed == -1):
            given["seed"] = int.from_bytes(os.urandom(4), "little") & 0x7FFFFFFF
        raw = _text(prompt)
        js = _lib.keywords("generate", given)
        err = _lib.Error()
        probs = _n_probs(logprobs, n_probs)
        run = None
        if fwd_hooks:
            hooks = self._hooks_by_name(fwd_hooks)
            self._check_names(list(hooks))
            run = _HookRun(hooks, None, set())
            names = (ctypes.c_char_p * len(hooks))(*[n.encode() for n in hooks])
        with self._use() as h:  # another thread may close the model meanwhile: it is freed after, not under
            story_file = _lib.c_path("generate", "stories", stories) if stories else None
            if run is not None:
                ptr = _lib.lib().slm_py_generate_hooked(h, raw, len(raw), js.encode(), -1 if probs is None else probs,
                                                        run.callback, None, names, len(hooks), story_file,
                                                        _installed_stories(), ctypes.byref(err))
            elif probs is None:
                ptr = _lib.lib().slm_py_generate(h, raw, len(raw), js.encode(), story_file, _installed_stories(),
                                                 ctypes.byref(err))
            else:
                ptr = _lib.lib().slm_py_generate_json(h, raw, len(raw), js.encode(), probs, story_file,
                                                      _installed_stories(), ctypes.byref(err))
        if run is not None and run.exception is not None:
            raise run.exception
        if not ptr:
            raise err.exception("generate", given)
        out = json.loads(_lib.take_string(ptr))
        self.last_seed = operator.index(given["seed"])
        if probs is not None:
            if out.get("names_from"):  # found from the library's folder: no "bin/../" in a path shown
                out["names_from"] = os.path.normpath(out["names_from"])
            return out
        return out[0] if samples == 1 else out


def generate_params():
    """`storylm generate`'s options that generate takes by keyword, as the C
    library's table has them (the CLI's and the server's too): {keyword:
    {"name", "type", "help", "default", "min", "max", "choices", ...}}."""
    return {k: dict(v) for k, v in _lib.params("generate").items()}


def generate_defaults():
    """The sampler's defaults, as the C library (and so the CLI and the server) has
    them: {"max_tokens", "temperature", "top_k", "top_p", "min_p", "repeat_penalty",
    "repeat_last_n"}."""
    err = _lib.Error()
    return json.loads(_lib.check_string(_lib.lib().slm_py_generate_defaults(ctypes.byref(err)), err))


def _n_probs(logprobs, n_probs):
    """generate's n_probs as the library takes it: None for the text alone
    (neither logprobs nor n_probs), else 0 or more."""
    if n_probs is None:
        if not isinstance(logprobs, bool):
            raise _lib.KeywordTypeError("generate: logprobs=%r is not True or False" % (logprobs,))
        return 0 if logprobs else None
    if isinstance(n_probs, bool) or not isinstance(n_probs, numbers.Integral):
        raise _lib.KeywordTypeError("generate: n_probs=%r is not a whole number" % (n_probs,))
    if not 0 <= n_probs < 2**31:  # the library says its own range; a C int carries it there
        raise _lib.KeywordError("generate: n_probs=%r is out of range" % (n_probs,), "give n_probs from 0 to 20")
    return operator.index(n_probs)


def _batch_of(x):
    """The rows of a batch (a list or tuple of texts or of id sequences, or a
    [batch, pos] array), or None for one text or one sequence of ids."""
    if isinstance(x, np.ndarray):
        return list(x) if x.ndim == 2 else None
    if isinstance(x, (list, tuple)) and x:
        if all(isinstance(r, str) for r in x) or all(isinstance(r, (list, tuple, np.ndarray)) for r in x):
            return list(x)
    return None


def _position_axes(name):
    """The position axes of hook name's array: a pattern's or a score's two, else the first."""
    return (1, 2) if name.endswith(("hook_pattern", "hook_distance_score", "hook_attn_scores")) else (0,)


def _padded(arrays, axes):
    """Arrays of one shape but for their lengths on axes, stacked on a new
    first axis, each padded with 0 on those axes to the longest."""
    shape = list(arrays[0].shape)
    for a in arrays:
        for ax in axes:
            shape[ax] = max(shape[ax], a.shape[ax])
    out = np.zeros([len(arrays)] + shape, arrays[0].dtype)
    for i, a in enumerate(arrays):
        out[(i,) + tuple(slice(0, n) for n in a.shape)] = a
    return out


def _text(text):
    """text as UTF-8 bytes, its length passed beside it (a NUL in it is the library's to refuse)."""
    if not isinstance(text, str):
        raise StorylmError("expected a text (str), got %s" % type(text).__name__, "give the text as a str")
    return text.encode("utf-8")


def _data_folders():
    """Where the package looks for the source tree's files, in order: the
    prefix cmake --install put it in (PREFIX/lib/python3/dist-packages/storylm
    -> PREFIX/share/storylm), its own share/ (a pip-installed package's copy),
    the source checkout holding python/."""
    here = _lib.HERE
    return [os.path.normpath(p) for p in (os.path.join(here, "..", "..", "..", "..", "share", "storylm"),
                                          os.path.join(here, "share"), os.path.join(here, "..", ".."))]


def _source_file(rel):
    """A file of the source tree (rel: "models/tinystories.safetensors") in the
    first of _data_folders() that has it, or None."""
    for root in _data_folders():
        path = os.path.join(root, rel)
        if os.path.isfile(path):
            return path
    return None


def _installed_stories():
    """data/stories.txt, whose names generation capitalises when the CLI's own places have none."""
    path = _source_file(os.path.join("data", "stories.txt"))
    return path.encode() if path else None


def shipped_model():
    """The shipped model's path (models/tinystories.safetensors), found as the CLI finds it, or None."""
    return _source_file(os.path.join("models", "tinystories.safetensors"))


def load(path=None, kernels=None):
    """A model file (a str, bytes or os.PathLike) -> Model. None:
    ./model.safetensors when it is there, else the shipped model
    (models/tinystories.safetensors), as the CLI chooses. kernels: those of
    its forward passes, loss and probes, as the CLI's --kernels: "blas" (None:
    the default) or "portable" (the WebAssembly build's and the static page's
    bits; generate takes its own kernels= keyword)."""
    if path is None and os.path.isfile("model.safetensors"):
        path = "model.safetensors"
    if path is None:
        path = shipped_model()
        if path is None:  # said here: the library would look beside the interpreter, in the CLI's words
            raise StorylmError("no model.safetensors here, and no shipped model in %s"
                               % ", ".join(os.path.join(p, "models", "tinystories.safetensors")
                                           for p in _data_folders()),
                               "give storylm.load the path of a model file, train one with "
                               "storylm.train(STORIES, OUT), or install storylm with its models "
                               "(cmake --install, or pip install ./python from the source tree)")
    elif not os.path.exists(_lib.c_path("load", "path", path)):  # said here: the library's hint names the CLI's flags
        path = _shipped_by_name(path)
    return Model(path, kernels)


# The forms of a shipped model's short name, as the CLI's -m reads them (src/files/data_files.c).
_SHORT_NAME_FORMS = ("%s", "%s.safetensors", "tinystories-%s.safetensors")


def _shipped_by_name(name):
    """A shipped model by its short name ("tinystories", "transformer", "window8", ...) -> its path."""
    text = os.fsdecode(name)
    if "/" not in text and os.sep not in text:
        for form in _SHORT_NAME_FORMS:
            found = _source_file(os.path.join("models", form % text))
            if found:
                return found
    raise StorylmError(f"no model file '{text}', nor a shipped model of that name",
                       "give storylm.load the path of a model file, a shipped model by its short name "
                       "(tinystories, transformer, window8, layers2, induction, induction-attn-only, ...), or train "
                       "one with storylm.train(STORIES, OUT)")


_LENS_DOCS = {
    "W_E": "the token embedding [d_vocab, d_model] (the chapter's network: embedding)",
    "W_pos": "the learned positions [n_ctx, d_model] (--position-scheme absolute only)",
    "W_Q": "queries [n_layers, n_heads, d_model, d_head] (the chapter's network: a tuple of [H, in, kd], a layer each)",
    "W_K": "keys, as W_Q", "W_V": "values, as W_Q (vd for the chapter's network)",
    "W_O": "the heads' output projection [n_layers, n_heads, d_head, d_model] (the transformer only)",
    "b_Q": "[n_layers, n_heads, d_head] (the transformer only)", "b_K": "as b_Q", "b_V": "as b_Q",
    "b_O": "[n_layers, d_model] (the transformer only)",
    "W_in": "the MLP's input [n_layers, d_model, d_mlp] (the chapter's network: hidden.weight transposed, [Z, 128])",
    "b_in": "[n_layers, d_mlp] (the chapter's network: hidden.bias [128])",
    "W_out": "the MLP's output [n_layers, d_mlp, d_model] (the transformer only)",
    "b_out": "[n_layers, d_model] (the transformer only)",
    "W_U": "the unembedding [d_model, d_vocab] (the chapter's network: output.weight transposed, [128, V])",
    "b_U": "[d_vocab] (the chapter's network: output.bias)",
}


def _lens_property(name):
    def get(self):
        value = self._weights()[3].get(name)
        if value is None:
            raise AttributeError("this model (arch %s) has no %s: %s; model.state_dict() holds its tensors"
                                 % (self.cfg.arch, name, _LENS_DOCS[name]))
        return value

    return property(get, doc=_LENS_DOCS[name] + " (read-only)")


for _name in _LENS_DOCS:
    setattr(Model, _name, _lens_property(_name))
