"""ActivationCache: run_with_cache's arrays by hook name (a dict, as before),
with TransformerLens's ways of reading them: cache["pattern", 0],
accumulated_resid, decompose_resid, stack_head_results, apply_ln_to_stack
and logit_attrs. The arrays are the pass's own (computed in C); what these
methods add (sums and products with the weights, and the LayerNorm's scale
where the cache holds none) is numpy's float32 arithmetic on them; the
transformer's attn_out, mlp_out, head results and LayerNorm scales are the
pass's own hook points."""

import numpy as np

from ._lib import StorylmError

# TransformerLens's short names (utils.get_act_name's aliases) -> the hook's.
_ALIAS = {"attn": "pattern", "attn_logits": "attn_scores", "key": "k", "query": "q", "value": "v",
          "mlp_pre": "pre", "mlp_post": "post"}
_ATTN = {"q", "k", "v", "z", "pattern", "attn_scores", "result", "distance_score"}
_MLP = {"pre", "post"}
_LN_EPS = float(np.float32(1e-5))  # the library's TF_LN_EPS, a float widened to double


def act_name(name, layer=None, layer_type=None, n_layers=None):
    """TransformerLens's get_act_name: ("pattern", 0) -> "blocks.0.attn.hook_pattern",
    ("resid_pre", 1) -> "blocks.1.hook_resid_pre", ("embed",) -> "hook_embed",
    ("scale", 0, "ln1") -> "blocks.0.ln1.hook_scale"; a full name as it is.
    A negative layer counts from the last (n_layers)."""
    if "." in name or name.startswith("hook_"):
        return name
    name = _ALIAS.get(name, name)
    if name in _ATTN:
        layer_type = "attn"
    elif name in _MLP:
        layer_type = "mlp"
    elif layer_type in ("a", "m", "b", "block", "blocks"):
        layer_type = {"a": "attn", "m": "mlp"}.get(layer_type)
    if layer is not None and layer < 0 and n_layers:
        layer += n_layers
    return ".".join((["blocks.%d" % layer] if layer is not None else []) + ([layer_type] if layer_type else [])
                    + ["hook_" + name])


class ActivationCache(dict):
    """run_with_cache's arrays under their hook names (a dict: keys(),
    items(), cache[name] as before), with a batch axis first when the run
    was a batch (has_batch_dim). model is the Model that made it."""

    def __init__(self, arrays, model, has_batch_dim=False):
        super().__init__(arrays or {})
        self.model = model
        self.has_batch_dim = has_batch_dim

    def __getitem__(self, key):
        if isinstance(key, tuple):
            key = act_name(*key, n_layers=self.model.cfg.n_layers)
        elif isinstance(key, str) and not dict.__contains__(self, key):
            key = act_name(key)  # "embed", "hidden", "logits"
        try:
            return dict.__getitem__(self, key)
        except KeyError:
            raise KeyError("%r is not in the cache (it holds %s); run_with_cache keeps every hook unless "
                           "names_filter leaves it out" % (key, ", ".join(self))) from None

    def __reduce__(self):
        """Pickled (or deep-copied) as the plain dict of its arrays: the model is not a thing to pickle."""
        return dict, (dict(self),)

    def __repr__(self):
        return "ActivationCache(%d arrays%s: %s)" % (len(self), ", batched" if self.has_batch_dim else "",
                                                     ", ".join(self))

    # ---- helpers -------------------------------------------------------------

    def _has_residual(self):
        """Whether the model has a residual stream (the transformer, attn-only): it declares resid_pre."""
        return "blocks.0.hook_resid_pre" in self.model.hook_names

    def _has(self, name):
        """Whether the model declares hook name and this cache holds it."""
        return name in self.model.hook_names and dict.__contains__(self, name)

    def _residual(self, what):
        if not self._has_residual():
            raise StorylmError("%s: the %s network has no residual stream" % (what, self.model.cfg.arch),
                               "the chapter's network reads the row and the heads through its hidden layer: "
                               "hook_hidden_in, model.W_in and stack_head_results hold its parts")

    def _pos(self, a, pos_slice):
        """a ([batch,] pos, ...) at pos_slice (an int, a slice or a list of positions; None: all)."""
        if pos_slice is None:
            return a
        axis = 1 if self.has_batch_dim else 0
        index = [slice(None)] * a.ndim
        index[axis] = pos_slice
        return a[tuple(index)]

    def _layer(self, layer):
        n = self.model.cfg.n_layers
        if layer is None:
            return n
        if layer < 0:
            layer += n + 1
        if not 0 <= layer <= n:
            raise StorylmError("layer %d is out of range: 0 to %d" % (layer, n), "give a layer of the model")
        return layer

    @staticmethod
    def _out(stack, labels, return_labels):
        stack = np.stack(stack) if stack else np.zeros((0,))
        return (stack, labels) if return_labels else stack

    # ---- the residual stream ---------------------------------------------------

    def accumulated_resid(self, layer=None, incl_mid=False, apply_ln=False, pos_slice=None, return_labels=False):
        """The residual stream before each layer up to layer (None: all, ending with
        the last block's resid_post), stacked first: [components, [batch,] pos,
        d_model]; incl_mid adds each block's resid_mid; apply_ln: through
        apply_ln_to_stack. Labels "0_pre", "0_mid", ..., "final_post"."""
        self._residual("accumulated_resid")
        layer = self._layer(layer)
        stack, labels = [], []
        has_mid = "blocks.0.hook_resid_mid" in self.model.hook_names  # attn-only's blocks have none
        for l in range(layer):
            stack.append(self["resid_pre", l]), labels.append("%d_pre" % l)
            if incl_mid and has_mid:
                stack.append(self["resid_mid", l]), labels.append("%d_mid" % l)
        if layer == self.model.cfg.n_layers:
            stack.append(self["resid_post", layer - 1]), labels.append("final_post")
        stack = [self._pos(s, pos_slice) for s in stack]
        if apply_ln:
            stack = list(self.apply_ln_to_stack(np.stack(stack), layer, pos_slice=pos_slice))
        return self._out(stack, labels, return_labels)

    def decompose_resid(self, layer=None, mlp_input=False, mode="all", apply_ln=False, pos_slice=None,
                        incl_embeds=True, return_labels=False):
        """The residual stream at layer (None: the end) as the sum of its parts:
        hook_embed, hook_pos_embed (where the model has it), then each block's
        hook_attn_out and hook_mlp_out (where its blocks have an MLP), stacked
        first: [components, [batch,] pos, d_model].
        mlp_input: up to the MLP of layer (its attention output too); mode
        "all", "attn" or "mlp". Labels "embed", "pos_embed", "0_attn_out", "0_mlp_out", ..."""
        self._residual("decompose_resid")
        if mode not in ("all", "attn", "mlp"):
            raise StorylmError("mode %r" % (mode,), 'give "all", "attn" or "mlp"')
        layer = self._layer(layer)
        stack, labels = [], []
        if incl_embeds:
            stack.append(self["hook_embed"]), labels.append("embed")
            rest = self["resid_pre", 0] - self["hook_embed"]
            if "hook_pos_embed" in self.model.hook_names:
                stack.append(self["hook_pos_embed"]), labels.append("pos_embed")
            elif rest.any():  # the sinusoidal tag, which no hook holds
                stack.append(rest), labels.append("pos_embed")
        for l in range(min(layer + (1 if mlp_input else 0), self.model.cfg.n_layers)):
            if mode != "mlp":
                stack.append(self["attn_out", l]), labels.append("%d_attn_out" % l)
            if mode != "attn" and l < layer and "blocks.0.hook_mlp_out" in self.model.hook_names:
                stack.append(self["mlp_out", l]), labels.append("%d_mlp_out" % l)
        stack = [self._pos(s, pos_slice) for s in stack]
        if apply_ln:
            stack = list(self.apply_ln_to_stack(np.stack(stack), layer, mlp_input, pos_slice=pos_slice))
        return self._out(stack, labels, return_labels)

    def apply_ln_to_stack(self, residual_stack, layer=None, mlp_input=False, pos_slice=None, has_batch_dim=None):
        """residual_stack [components, [batch,] pos, d_model] centred and divided
        by the scale of the LayerNorm that reads layer's residual (None or
        n_layers: ln_final; else blocks.layer.ln1, or ln2 with mlp_input): its
        cached hook_scale, as TransformerLens's (its w and b are not applied),
        or, where the cache holds no scale, sqrt(var + 1e-5) of the cached
        residual it normalised. The chapter's network has no LayerNorm: the
        stack comes back as it is."""
        if not self._has_residual():
            return residual_stack
        layer = self._layer(layer)
        if layer == self.model.cfg.n_layers:
            name, read = "ln_final.hook_scale", "blocks.%d.hook_resid_post" % (layer - 1)
        else:
            name = "blocks.%d.%s.hook_scale" % (layer, "ln2" if mlp_input else "ln1")
            read = "blocks.%d.hook_%s" % (layer, "resid_mid" if mlp_input else "resid_pre")
        if self._has(name):  # a batch's padding holds 0: read there as 1, its stack is 0 anyway
            scale = self._pos(self[name], pos_slice)
            scale = np.where(scale == 0, np.float32(1), scale)
        else:
            read = self._pos(self[read], pos_slice).astype(np.float64)
            mu = read.mean(-1, keepdims=True)
            scale = np.sqrt(((read - mu) ** 2).mean(-1, keepdims=True) + _LN_EPS)
        stack = np.asarray(residual_stack, np.float32)
        centred = stack - stack.mean(-1, keepdims=True, dtype=np.float64).astype(np.float32)
        return (centred / scale.astype(np.float32)).astype(np.float32)

    # ---- heads -------------------------------------------------------------------

    def stack_head_results(self, layer=None, return_labels=False, incl_remainder=False, pos_slice=None,
                           apply_ln=False):
        """Each head's output in the space the model reads it, for the heads of
        the layers below layer (None or -1: all), stacked first: [heads, [batch,]
        pos, width]. The transformer and attn-only: hook_result[:, h] (z[h] @
        W_O[l, h] where the cache holds no result), in d_model (b_O not
        included, as TransformerLens's); the chapter's network: z[h] through its
        columns of the hidden layer (W_in's rows of head h), its share of the
        hidden layer's input sum, width 128. incl_remainder: one more, "remainder":
        what the heads leave of the residual at layer (transformer) or of the
        hidden layer's sum with b_in (chapter's). apply_ln: through apply_ln_to_stack.
        Labels "L0H0", "L0H1", ..."""
        m = self.model
        if m.cfg.arch == "window8":
            raise StorylmError("stack_head_results: window8 has no heads", "its hidden layer reads the last 8 rows")
        layer = m.cfg.n_layers if layer is None or layer == -1 else self._layer(layer)
        stack, labels = [], []
        for l in range(layer):
            result = "blocks.%d.attn.hook_result" % l
            if self._has(result):
                for h in range(m.cfg.n_heads):
                    stack.append(self[result][..., h, :]), labels.append("L%dH%d" % (l, h))
                continue
            z = self["z", l]
            for h in range(m.cfg.n_heads):
                stack.append(z[..., h, :] @ self._head_reader(l, h)), labels.append("L%dH%d" % (l, h))
        if incl_remainder:
            total = self._head_target(layer)
            stack.append(total - np.sum(stack, axis=0, dtype=np.float32) if stack else total)
            labels.append("remainder")
        stack = [self._pos(s, pos_slice) for s in stack]
        if apply_ln:
            stack = list(self.apply_ln_to_stack(np.stack(stack), layer, pos_slice=pos_slice))
        return self._out(stack, labels, return_labels)

    def _head_reader(self, l, h):
        """The matrix that reads head h of layer l: W_O[l, h] [dh, D], or the
        chapter's network's rows of W_in for the head's part of z [vd, 128]."""
        m = self.model
        if self._has_residual():
            return m.W_O[l, h]
        vd = m.cfg.value_dim
        first = m.cfg.row_dim + (l * m.cfg.n_heads + h) * vd
        return m.W_in[first:first + vd]

    def _head_target(self, layer):
        """What stack_head_results' remainder completes: the residual at layer, or
        the hidden layer's input sum (hook_hidden_in @ W_in + b_in)."""
        m = self.model
        if self._has_residual():
            return self["resid_post", layer - 1] if layer == m.cfg.n_layers else self["resid_pre", layer]
        return self["hook_hidden_in"] @ m.W_in + m.b_in

    # ---- logits --------------------------------------------------------------------

    def logit_attrs(self, residual_stack, tokens, incorrect_tokens=None, pos_slice=None, has_batch_dim=None):
        """Each component's direct share of the logit of tokens (minus that of
        incorrect_tokens): residual_stack [components, ..., width] times W_U's
        column of each token, summed over width. tokens: an id, a piece ("lily")
        or an array of ids lining up with the stack's axes before width from the
        right (for a stack at one position, [batch] ids of a batch)."""
        directions = self._directions(tokens)
        if incorrect_tokens is not None:
            directions = directions - self._directions(incorrect_tokens)
        stack = np.asarray(residual_stack, np.float32)
        if pos_slice is not None:
            stack = np.stack([self._pos(s, pos_slice) for s in stack])
        return (stack * directions).sum(-1, dtype=np.float32)

    def _directions(self, tokens):
        m = self.model
        if isinstance(tokens, str):
            ids = m.tokenize(tokens)
            if ids.size != 1:
                raise StorylmError("%r is %d tokens, not one" % (tokens, ids.size), "give one piece or its id")
            tokens = int(ids[0])
        return m.W_U.T[np.asarray(tokens)]
