"""Sparse autoencoders in Python: an SAE folder of `storylm sae train` (SAELens's
files) loaded by the C library, with SAELens's encode, decode and forward on
numpy arrays, and hooks that splice it into a model's pass, so the numbers are
`storylm sae eval`'s and `storylm sae features`'s.

    sae = storylm.SAE.load("hidden.sae")
    z = sae.encode(cache[sae.cfg.hook_name])          # [T, d_sae]
    loss = m.run_with_hooks(text, fwd_hooks=sae.hooks(), return_type="loss")
    loss = m.run_with_saes(text, saes=[sae], return_type="loss")   # the same"""

import ctypes
import json
import os
import threading

import numpy as np

from . import _lib
from ._lib import StorylmError

_F = ctypes.POINTER(ctypes.c_float)
_DECLARED = set()


def _lib_sae():
    """The library with the SAE calls declared (once)."""
    lib = _lib.lib()
    if id(lib) not in _DECLARED:
        P, E = ctypes.c_void_p, ctypes.POINTER(_lib.Error)
        sig = {
            "slm_py_sae_load": (P, [ctypes.c_char_p, E]),
            "slm_py_sae_free": (None, [P]),
            "slm_py_sae_config_json": (P, [P, E]),
            "slm_py_sae_params": (_F, [P, ctypes.POINTER(ctypes.c_size_t)]),
            "slm_py_sae_encode": (ctypes.c_int, [P, _F, ctypes.c_int, _F, E]),
            "slm_py_sae_decode": (ctypes.c_int, [P, _F, ctypes.c_int, _F, E]),
            "slm_py_sae_forward": (ctypes.c_int, [P, _F, ctypes.c_int, _F, E]),
        }
        for name, (res, args) in sig.items():
            f = getattr(lib, name)
            f.restype, f.argtypes = res, args
        _DECLARED.add(id(lib))
    return lib


class SAEConfig(dict):
    """cfg.json as SAELens writes it (architecture, d_in, d_sae, k, hook_name,
    apply_b_dec_to_input, normalize_activations, model_name, ...), readable as
    keys or attributes."""

    def __getattr__(self, name):
        try:
            return self[name]
        except KeyError:
            raise AttributeError(name) from None


class SAE:
    """A sparse autoencoder read from a folder of storylm sae train (SAE.load)."""

    def __init__(self, path):
        raw = _lib.c_path("SAE.load", "path", path)  # a str, bytes or os.PathLike, checked first
        self.path = os.fsdecode(raw)
        err = _lib.Error()
        lib = _lib_sae()
        ptr = lib.slm_py_sae_load(raw, ctypes.byref(err))
        if not ptr:
            raise err.exception()
        self._ptr, self._lock = ptr, threading.Lock()
        read = json.loads(_lib.check_string(lib.slm_py_sae_config_json(ptr, ctypes.byref(err)), err))
        with open(os.path.join(self.path, "cfg.json"), encoding="utf-8") as f:
            self.cfg = SAEConfig(json.load(f))
        self.cfg.update(read)  # what the library read wins (hook_name from metadata, k absent for standard)
        self._weights()
        self._mid = {}  # hook_mlp_out: each row's resid_mid, kept until its resid_post

    @classmethod
    def load(cls, path):
        """The SAE in path (a str, bytes or os.PathLike): cfg.json and
        sae_weights.safetensors, checked as `storylm sae eval` checks them."""
        return cls(path)

    def _weights(self):
        """W_enc [d_in, d_sae], b_enc [d_sae], W_dec [d_sae, d_in], b_dec [d_in]: read-only copies of the library's."""
        n = ctypes.c_size_t()
        flat = np.ctypeslib.as_array(_lib_sae().slm_py_sae_params(self._ptr, ctypes.byref(n)), shape=(n.value,)).copy()
        D, L = self.cfg.d_in, self.cfg.d_sae
        parts, at = {}, 0
        names = (("W_enc", (D, L)), ("b_enc", (L,)), ("W_dec", (L, D)), ("b_dec", (D,)))
        if self.cfg.architecture == "jumprelu":  # a trained BatchTopK, as SAELens saves one
            names += (("threshold", (L,)),)
        for name, shape in names:
            size = int(np.prod(shape))
            parts[name] = flat[at:at + size].reshape(shape)
            parts[name].flags.writeable = False
            at += size
        self.W_enc, self.b_enc, self.W_dec, self.b_dec = (parts[k] for k in ("W_enc", "b_enc", "W_dec", "b_dec"))
        self.threshold = parts.get("threshold")  # JumpReLU's [d_sae], else None

    def state_dict(self):
        """{W_enc, b_enc, W_dec, b_dec}: the file's tensors by SAELens's names."""
        d = {"W_enc": self.W_enc, "b_enc": self.b_enc, "W_dec": self.W_dec, "b_dec": self.b_dec}
        if self.threshold is not None:
            d["threshold"] = self.threshold
        return d

    def close(self):
        """Frees the library's copy (also done when the SAE is garbage collected)."""
        lock = getattr(self, "_lock", None)
        if lock is None:
            return
        with lock:
            ptr, self._ptr = self._ptr, None
        if ptr:
            _lib_sae().slm_py_sae_free(ptr)

    def __del__(self):
        self.close()

    def __repr__(self):
        return "storylm.SAE(%r, architecture=%s, d_in=%d, d_sae=%d, hook_name=%r)" % (
            self.path, self.cfg.architecture, self.cfg.d_in, self.cfg.d_sae, self.cfg.hook_name)

    # ---- the passes ---------------------------------------------------------------

    def _call(self, fn, x, width_in, width_out, what):
        """fn of the library over x's rows: x [..., width_in] -> [..., width_out] np.float32."""
        arr = np.asarray(x)
        if arr.ndim < 1 or arr.shape[-1] != width_in:
            raise StorylmError("%s: expected an array [..., %d], got one of shape %s" % (what, width_in, arr.shape),
                               "give the hook's activations, one row of %d numbers a position" % width_in)
        rows = np.ascontiguousarray(arr.reshape(-1, width_in), dtype=np.float32)
        if rows.shape[0] > 2**31 - 1:
            raise StorylmError("%s: too many rows (%d)" % (what, rows.shape[0]), "give fewer rows at a time")
        out = np.empty((rows.shape[0], width_out), np.float32)
        err = _lib.Error()
        with self._lock:
            if self._ptr is None:
                raise StorylmError("the SAE was closed", "load it again with storylm.SAE.load")
            rc = getattr(_lib_sae(), fn)(self._ptr, rows.ctypes.data_as(_F), rows.shape[0], out.ctypes.data_as(_F),
                                         ctypes.byref(err))
        if rc:
            raise err.exception()
        return out.reshape(arr.shape[:-1] + (width_out,))

    def encode(self, x):
        """x [..., d_in] -> the latents z [..., d_sae] (np.float32), SAELens's
        encode: z = ReLU((x - b_dec) W_enc + b_enc), TopK keeping each row's k
        largest (ties to the smaller latent) and 0 elsewhere."""
        return self._call("slm_py_sae_encode", x, self.cfg.d_in, self.cfg.d_sae, "encode")

    def decode(self, z):
        """z [..., d_sae] -> x_hat [..., d_in] = z W_dec + b_dec (np.float32)."""
        return self._call("slm_py_sae_decode", z, self.cfg.d_sae, self.cfg.d_in, "decode")

    def forward(self, x):
        """x [..., d_in] -> decode(encode(x)): the reconstruction `storylm sae eval` splices in."""
        return self._call("slm_py_sae_forward", x, self.cfg.d_in, self.cfg.d_in, "forward")

    __call__ = forward

    # ---- splicing into a model's pass ----------------------------------------------

    def splice(self, x, hook=None):
        """A hook function for the SAE's own hook point: the activations
        (any shape [T, ...] whose numbers a position are d_in, as hook_z's
        [T, H, d]) replaced by their reconstruction."""
        return self.forward(np.asarray(x).reshape(x.shape[0], -1)).reshape(x.shape)

    def hooks(self):
        """fwd_hooks that splice the SAE in at cfg.hook_name: [(hook_name,
        splice)], or for a transformer's blocks.L.hook_mlp_out (no hook of its
        own: resid_post - resid_mid) a hook keeping resid_mid and one writing
        resid_post = resid_mid + forward(resid_post - resid_mid), as sae eval does."""
        name = self.cfg.hook_name
        parts = name.split(".")
        if len(parts) == 3 and parts[0] == "blocks" and parts[2] == "hook_mlp_out":
            mid, post = "blocks.%s.hook_resid_mid" % parts[1], "blocks.%s.hook_resid_post" % parts[1]
            return [(mid, self._keep_mid), (post, self._splice_mlp_out)]
        return [(name, self.splice)]

    def _keep_mid(self, x, hook):
        self._mid[(threading.get_ident(), hook.row)] = x.copy()

    def _splice_mlp_out(self, x, hook):
        mid = self._mid.pop((threading.get_ident(), hook.row))
        return mid + self.forward(x - mid)


def run_with_saes(model, text_or_ids, saes=(), return_type="logits", **kwargs):
    """model.run_with_hooks with each SAE of saes spliced in at its hook point
    (SAELens's run_with_saes); other keywords go to run_with_hooks (fwd_hooks
    run after the SAEs' at the same point)."""
    hooks = [h for sae in ([saes] if isinstance(saes, SAE) else saes) for h in sae.hooks()]
    return model.run_with_hooks(text_or_ids, fwd_hooks=hooks + list(kwargs.pop("fwd_hooks", None) or ()),
                                return_type=return_type, **kwargs)
