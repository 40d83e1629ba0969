"""A model's weights in Python: the file's tensors by their names
(state_dict), TransformerLens's names and shapes over them (W_E, W_Q, ...),
and changed weights loaded back (load_state_dict). The arrays are read-only
numpy views of the loaded model's own buffer, which they keep alive."""

import ctypes
import json

import numpy as np

from . import _lib
from ._lib import StorylmError


class _Pinned:
    """The parameter buffer of one loaded model as a read-only array's base:
    counted as a user of its Handle, so the buffer lives while a view of it does."""

    def __init__(self, handle):
        ptr = handle.share()
        self._handle = handle
        n = ctypes.c_size_t()
        data = _lib.lib().slm_py_params(ptr, ctypes.byref(n))
        self.__array_interface__ = {"shape": (n.value,), "typestr": "<f4", "data": (data, True), "version": 3}

    def __del__(self):
        self._handle.drop()


def tensor_table(ptr):
    """[{"name", "shape", "offset"}] of the model ptr, in its table's order."""
    err = _lib.Error()
    return json.loads(_lib.check_string(_lib.lib().slm_py_tensors_json(ptr, ctypes.byref(err)), err))


def flat_params(handle):
    """The loaded model's parameters, one read-only np.float32 array (a view)."""
    return np.asarray(_Pinned(handle))


def state_dict(table, flat):
    """{file's name: read-only view of its tensor, shaped as the file holds it}."""
    out = {}
    for t in table:
        size = int(np.prod(t["shape"]))
        out[t["name"]] = flat[t["offset"]:t["offset"] + size].reshape(t["shape"])
    return out


def _frozen(a):
    a.setflags(write=False)
    return a


def _stack(sd, names):
    """The tensors of names stacked on a new first axis (a read-only copy), or None when one is missing."""
    if not names or any(n not in sd for n in names):
        return None
    return _frozen(np.stack([sd[n] for n in names]))


def _transformer_names(sd, layers):
    """TransformerLens's names over the transformer's tensors: [n_layers, ...] stacks of the blocks'.
    A tied model (--tie-embeddings) has no unembed.W_U: its W_U is W_E.T, a view of the same numbers."""
    W_U = sd["unembed.W_U"] if "unembed.W_U" in sd else sd["embed.W_E"].T
    out = {"W_E": sd["embed.W_E"], "W_U": W_U, "b_U": sd["unembed.b_U"]}
    if "pos_embed.W_pos" in sd:
        out["W_pos"] = sd["pos_embed.W_pos"]
    for name, part in [("W_Q", "attn.W_Q"), ("W_K", "attn.W_K"), ("W_V", "attn.W_V"), ("W_O", "attn.W_O"),
                       ("b_Q", "attn.b_Q"), ("b_K", "attn.b_K"), ("b_V", "attn.b_V"), ("b_O", "attn.b_O"),
                       ("W_in", "mlp.W_in"), ("b_in", "mlp.b_in"), ("W_out", "mlp.W_out"),
                       ("b_out", "mlp.b_out")]:
        out[name] = _stack(sd, ["blocks.%d.%s" % (l, part) for l in range(layers)])
    return out


def _layer_name(l, base):
    """The chapter's network's name of layer l's tensor base ("query" -> "layer2.query" for l = 1)."""
    return base if l == 0 else "layer%d.%s" % (l + 1, base)


def _chapter_names(sd, layers):
    """The chapter's network under TransformerLens's names where it has the part:
    W_E (embedding), W_pos (position), W_Q/W_K/W_V one [H, in, d] array per
    layer (a tuple: a further layer reads the row and the heads below, so the
    layers differ in width), the hidden layer as the MLP's W_in [Z, 128]
    (hidden.weight transposed) and b_in, the output as W_U [128, V] and b_U."""
    out = {"W_E": sd["embedding"], "W_in": sd["hidden.weight"].T, "b_in": sd["hidden.bias"],
           "W_U": sd["output.weight"].T, "b_U": sd["output.bias"]}
    if "position" in sd:
        out["W_pos"] = sd["position"]
    for name, base in [("W_Q", "query"), ("W_K", "key"), ("W_V", "value")]:
        if base in sd:
            out[name] = tuple(sd[_layer_name(l, base)] for l in range(layers))
    return out


def lens_names(arch, sd, layers):
    """{TransformerLens's name: array} for a model of arch (None where it lacks the part, as attn-only's MLP)."""
    if "embed.W_E" in sd:  # the residual family (transformer, attn-only): TransformerLens's own tensor names
        return _transformer_names(sd, layers)
    return _chapter_names(sd, layers)


def changed_params(table, flat, changes, strict):
    """A copy of flat with changes (name -> array) put in; every name must be
    the model's and every shape its tensor's; strict: every tensor given."""
    by_name = {t["name"]: t for t in table}
    unknown = [n for n in changes if n not in by_name]
    if unknown:
        raise StorylmError("load_state_dict: no tensor %s in this model" % ", ".join(map(repr, unknown)),
                           "the model's tensors are model.state_dict()'s keys: " + ", ".join(by_name))
    missing = [n for n in by_name if n not in changes]
    if strict and missing:
        raise StorylmError("load_state_dict: missing %s" % ", ".join(map(repr, missing)),
                           "give every tensor of model.state_dict(), or strict=False to keep the others")
    out = np.array(flat, dtype=np.float32, copy=True)
    for name, value in changes.items():
        t = by_name[name]
        arr = np.asarray(value)
        if tuple(arr.shape) != tuple(t["shape"]):
            raise ValueError("load_state_dict: %r has shape %s; the model's is %s"
                             % (name, tuple(arr.shape), tuple(t["shape"])))
        if not (np.issubdtype(arr.dtype, np.floating) or np.issubdtype(arr.dtype, np.integer)):
            raise TypeError("load_state_dict: %r is an array of %s, not of numbers" % (name, arr.dtype))
        size = int(np.prod(t["shape"]))
        out[t["offset"]:t["offset"] + size] = arr.astype(np.float32).ravel()
    return out
