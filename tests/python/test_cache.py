"""ActivationCache's methods against direct computations from the cached
tensors and the weights (run by tests/e2e_python.sh with test_storylm.py's
environment)."""

import os
import pickle
import unittest

import numpy as np

import storylm
from test_storylm import MODELS, TEXT

CHAPTER, LAYERS2, TRANSFORMER, ATTN_ONLY = (os.path.join(MODELS, n + ".safetensors") for n in (
    "tinystories", "tinystories-layers2", "tinystories-transformer", "tinystories-induction-attn-only"))
TEXTS = [TEXT, "Lily found a ball."]


def close(a, b, tol=1e-4, mask=None):
    """a and b alike to tol; mask [batch, pos]: on a batch's tokens only (the padding holds 0 in every cached array,
    so what is derived there is not the pass's)."""
    if a.shape != b.shape:
        return False
    if mask is not None:
        m = mask.astype(bool)
        tail = (Ellipsis, m) if a.shape[-m.ndim:] == m.shape else (Ellipsis, m, slice(None))
        a, b = a[tail], b[tail]
    return np.allclose(a, b, rtol=tol, atol=tol)


def layernorm(x, w, b):
    """The library's LayerNorm (src/arch/transformer/transformer_layers.c), in numpy."""
    x64 = x.astype(np.float64)
    mu = x64.mean(-1, keepdims=True)
    rstd = (1.0 / np.sqrt(((x64 - mu) ** 2).mean(-1, keepdims=True) + float(np.float32(1e-5)))).astype(np.float32)
    return (x - mu.astype(np.float32)) * rstd * w + b


class DictAccess(unittest.TestCase):
    def test_todays_dict_code_keeps_working(self):
        for path in (CHAPTER, LAYERS2, TRANSFORMER, ATTN_ONLY):
            m = storylm.load(path)
            _, cache = m.run_with_cache(TEXT)
            self.assertIsInstance(cache, dict)
            self.assertEqual(list(cache.keys()), m.hook_names)
            self.assertEqual([k for k, _ in cache.items()], m.hook_names)
            self.assertIs(cache["pattern", 0], cache["blocks.0.attn.hook_pattern"])
            self.assertIs(cache["z", -1], cache["blocks.%d.attn.hook_z" % (m.cfg.n_layers - 1)])
            self.assertIs(cache["embed"], cache["hook_embed"])
            with self.assertRaises(KeyError) as cm:
                cache["blocks.9.attn.hook_z"]
            self.assertIn("names_filter", str(cm.exception))

    def test_a_pickled_cache_is_its_dict(self):
        m = storylm.load(CHAPTER)
        _, cache = m.run_with_cache(TEXT)
        again = pickle.loads(pickle.dumps(cache))
        self.assertEqual(type(again), dict)
        self.assertTrue(all(np.array_equal(again[k], cache[k]) for k in cache))

    def test_shorthand_names(self):
        self.assertEqual(storylm.act_name("resid_pre", 1), "blocks.1.hook_resid_pre")
        self.assertEqual(storylm.act_name("attn", 0), "blocks.0.attn.hook_pattern")
        self.assertEqual(storylm.act_name("post", 1), "blocks.1.mlp.hook_post")
        self.assertEqual(storylm.act_name("normalized", None, "ln_final"), "ln_final.hook_normalized")
        self.assertEqual(storylm.act_name("scale", 0, "ln1"), "blocks.0.ln1.hook_scale")
        self.assertEqual(storylm.act_name("hidden"), "hook_hidden")


class Residual(unittest.TestCase):
    def setUp(self):
        self.m = storylm.load(TRANSFORMER)

    def test_accumulated_resid(self):
        for text in (TEXT, TEXTS):
            _, cache = self.m.run_with_cache(text)
            L = self.m.cfg.n_layers
            stack, labels = cache.accumulated_resid(incl_mid=True, return_labels=True)
            self.assertEqual(labels[:3], ["0_pre", "0_mid", "1_pre"])
            self.assertEqual(labels[-1], "final_post")
            self.assertEqual(len(stack), 2 * L + 1)
            self.assertTrue(np.array_equal(stack[-1], cache["blocks.%d.hook_resid_post" % (L - 1)]))
            self.assertTrue(np.array_equal(stack[1], cache["blocks.0.hook_resid_mid"]))
            self.assertEqual(len(cache.accumulated_resid(layer=1)), 1)
            last = cache.accumulated_resid(pos_slice=-1)
            self.assertEqual(last.shape, (2 * L + 1 - L,) + ((2,) if isinstance(text, list) else ()) + (64,))
            self.assertTrue(np.array_equal(last[-1], cache["resid_post", L - 1][..., -1, :]))

    def test_decompose_sums_to_the_residual_and_attn_out_is_z_W_O(self):
        for text in (TEXT, TEXTS):
            _, cache = self.m.run_with_cache(text)
            mask = self.m.attention_mask(text) if isinstance(text, list) else None
            L = self.m.cfg.n_layers
            parts, labels = cache.decompose_resid(return_labels=True)
            self.assertEqual(labels[0], "embed")
            self.assertEqual(labels[-1], "%d_mlp_out" % (L - 1))
            self.assertTrue(close(parts.sum(0), cache["resid_post", L - 1]))
            z = cache["z", 0]
            attn_out = np.einsum("...hd,hdD->...D", z, self.m.W_O[0]) + self.m.b_O[0]
            self.assertTrue(close(parts[labels.index("0_attn_out")], attn_out, mask=mask))
            mlp_out = cache["post", 0] @ self.m.W_out[0] + self.m.b_out[0]
            self.assertTrue(close(parts[labels.index("0_mlp_out")], mlp_out, mask=mask))
            self.assertEqual(cache.decompose_resid(mode="attn", return_labels=True)[1][-1], "%d_attn_out" % (L - 1))

    def test_apply_ln_to_stack_then_w_and_b_is_ln_final(self):
        _, cache = self.m.run_with_cache(TEXTS)
        mask = self.m.attention_mask(TEXTS)
        sd = self.m.state_dict()
        final = cache.accumulated_resid(apply_ln=True)[-1]
        self.assertTrue(close(final * sd["ln_final.w"] + sd["ln_final.b"], cache["ln_final.hook_normalized"], 1e-5,
                              mask))
        # a stack is linear after it: its parts' normalised sum is the normalised whole
        parts = cache.decompose_resid(apply_ln=True)
        self.assertTrue(close(parts.sum(0), final))
        # layer 1's ln1 reads resid_pre 1
        ln1 = cache.apply_ln_to_stack(cache["resid_pre", 1][None], layer=1)[0] * sd["blocks.1.ln1.w"] + sd[
            "blocks.1.ln1.b"]
        self.assertTrue(close(ln1, layernorm(cache["resid_pre", 1], sd["blocks.1.ln1.w"], sd["blocks.1.ln1.b"])))

    def test_stack_head_results_sum_to_the_attention_output(self):
        _, cache = self.m.run_with_cache(TEXT)
        heads, labels = cache.stack_head_results(return_labels=True)
        H, L = self.m.cfg.n_heads, self.m.cfg.n_layers
        self.assertEqual(heads.shape[0], H * L)
        self.assertEqual(labels[H + 2], "L1H2")
        for l in range(L):
            self.assertTrue(close(heads[l * H:(l + 1) * H].sum(0) + self.m.b_O[l],
                                  cache["resid_mid", l] - cache["resid_pre", l]))
        self.assertTrue(close(heads[3], cache["z", 0][:, 3, :] @ self.m.W_O[0, 3], 1e-6))
        with_rest = cache.stack_head_results(incl_remainder=True)
        self.assertTrue(close(with_rest.sum(0), cache["resid_post", L - 1]))

    def test_logit_attrs_sum_to_the_logit(self):
        ids = self.m.to_ids(TEXT)
        logits, cache = self.m.run_with_cache(np.stack([ids[:9], ids[4:13]]))  # rows of one length: -1 is a token
        sd = self.m.state_dict()
        token = int(self.m.tokenize("ball")[0])
        parts = cache.decompose_resid(apply_ln=True, pos_slice=-1)
        attrs = cache.logit_attrs(parts * sd["ln_final.w"], token)
        self.assertEqual(attrs.shape, (len(parts), 2))
        whole = attrs.sum(0) + sd["ln_final.b"] @ self.m.W_U[:, token] + self.m.b_U[token]
        self.assertTrue(close(whole, logits[:, -1, token]))
        # a token and a wrong one: the difference of the two directions
        other = int(self.m.tokenize("cat")[0])
        diff = cache.logit_attrs(parts, "ball", incorrect_tokens=other)
        self.assertTrue(close(diff, parts @ (self.m.W_U[:, token] - self.m.W_U[:, other]), 1e-5))


class AttnOnly(unittest.TestCase):
    """The residual stream of blocks of attention alone: no mlp parts, no resid_mid."""

    def setUp(self):
        self.m = storylm.load(ATTN_ONLY)

    def test_decompose_and_heads_sum_to_the_residual(self):
        for text in (TEXT, TEXTS):
            _, cache = self.m.run_with_cache(text)
            mask = self.m.attention_mask(text) if isinstance(text, list) else None
            L, H = self.m.cfg.n_layers, self.m.cfg.n_heads
            parts, labels = cache.decompose_resid(return_labels=True)
            self.assertEqual(labels, ["embed"] + (["pos_embed"] if "hook_pos_embed" in cache else []) +
                             ["%d_attn_out" % l for l in range(L)])
            self.assertTrue(close(parts.sum(0), cache["resid_post", L - 1]))
            heads = cache.stack_head_results()
            for l in range(L):
                attn = heads[l * H:(l + 1) * H].sum(0) + self.m.b_O[l]
                self.assertTrue(close(attn, cache["resid_post", l] - cache["resid_pre", l], mask=mask))
                self.assertTrue(close(attn, cache["blocks.%d.hook_attn_out" % l], mask=mask))
            stack = cache.accumulated_resid()
            self.assertEqual(len(stack), L + 1)
            self.assertTrue(np.array_equal(stack[-1], cache["resid_post", L - 1]))

    def test_logit_attrs_sum_to_the_logit(self):
        logits, cache = self.m.run_with_cache(TEXT)
        sd = self.m.state_dict()
        token = int(self.m.tokenize("ball")[0])
        parts = cache.decompose_resid(apply_ln=True, pos_slice=-1)
        attrs = cache.logit_attrs(parts * sd["ln_final.w"], token)
        whole = attrs.sum(0) + sd["ln_final.b"] @ self.m.W_U[:, token] + self.m.b_U[token]
        self.assertTrue(close(whole, logits[-1, token]))


class ChapterNetwork(unittest.TestCase):
    def test_head_results_are_the_hidden_layers_inputs(self):
        for path in (CHAPTER, LAYERS2):
            m = storylm.load(path)
            for text in (TEXT, TEXTS):
                _, cache = m.run_with_cache(text)
                mask = m.attention_mask(text) if isinstance(text, list) else None
                heads = cache.stack_head_results()
                self.assertEqual(heads.shape[0], m.cfg.n_heads * m.cfg.n_layers)
                row = cache["hook_embed"] @ m.W_in[:m.cfg.row_dim]
                pre = heads.sum(0) + row + m.b_in
                self.assertTrue(close(np.tanh(pre), cache["hook_hidden"], mask=mask), path)
                rest = cache.stack_head_results(incl_remainder=True)
                self.assertTrue(close(rest[-1], row + m.b_in), path)
                attrs = cache.logit_attrs(cache["hook_hidden"][None], 5)
                self.assertTrue(close(attrs[0] + m.b_U[5], cache["hook_logits"][..., 5], mask=mask), path)

    def test_no_residual_stream(self):
        m = storylm.load(CHAPTER)
        _, cache = m.run_with_cache(TEXT)
        with self.assertRaises(storylm.StorylmError) as cm:
            cache.accumulated_resid()
        self.assertIn("hook_hidden_in", cm.exception.hint)
        stack = cache["hook_hidden"][None]
        self.assertIs(cache.apply_ln_to_stack(stack), stack)


if __name__ == "__main__":
    unittest.main()
