"""Weights in Python (state_dict, TransformerLens's names, load_state_dict,
save) against the model files and the CLI: run by tests/e2e_python.sh with
test_storylm.py's environment."""

import os
import subprocess
import tempfile
import unittest

import numpy as np

import storylm
from test_storylm import CLI, MODELS, TEXT, cli, read_safetensors, same_number

CHAPTER, LAYERS2, TRANSFORMER = (os.path.join(MODELS, n + ".safetensors")
                                 for n in ("tinystories", "tinystories-layers2", "tinystories-transformer"))
ATTN_ONLY = os.path.join(MODELS, "tinystories-induction-attn-only.safetensors")
ALL = [CHAPTER, LAYERS2, TRANSFORMER, ATTN_ONLY, os.path.join(MODELS, "tinystories-window8.safetensors")]


def close(a, b):
    """Equal to float32's rounding of a sum over a few hundred terms (numpy's order is not the pass's)."""
    return np.allclose(a, b, rtol=1e-4, atol=1e-4)


class StateDict(unittest.TestCase):
    def test_state_dict_is_the_files_tensors(self):
        for path in ALL:
            m = storylm.load(path)
            want = read_safetensors(path)[0]
            sd = m.state_dict()
            self.assertEqual(sorted(sd), sorted(want), path)
            for name, value in want.items():
                self.assertEqual(sd[name].dtype, np.float32)
                self.assertTrue(np.array_equal(sd[name], value), "%s: %s" % (path, name))

    def test_views_are_read_only_and_outlive_the_model(self):
        m = storylm.load(CHAPTER)
        sd, W_E = m.state_dict(), m.W_E
        with self.assertRaises(ValueError):
            sd["embedding"][0, 0] = 1
        with self.assertRaises(ValueError):
            W_E[0, 0] = 1
        want = read_safetensors(CHAPTER)[0]["embedding"]
        m.close()
        del m
        self.assertTrue(np.array_equal(W_E, want))  # the buffer lives while a view does
        self.assertTrue(np.array_equal(sd["embedding"], want))

    def test_close_frees_the_weights_no_view_holds(self):
        m = storylm.load(CHAPTER)
        m.W_E, m.state_dict()  # read, and let go
        handle = m._handle
        m.close()
        self.assertIsNone(handle._ptr, "freed at close, not when the Model is collected")


class LensNames(unittest.TestCase):
    def test_transformer_names_and_shapes(self):
        m = storylm.load(TRANSFORMER)
        c, sd = m.cfg, m.state_dict()
        L, H, D, dh, F, V = c.n_layers, c.n_heads, c.d_model, c.d_head, c.d_mlp, c.d_vocab
        shapes = {"W_E": (V, D), "W_pos": (c.n_ctx, D), "W_Q": (L, H, D, dh), "W_K": (L, H, D, dh),
                  "W_V": (L, H, D, dh), "W_O": (L, H, dh, D), "b_Q": (L, H, dh), "b_K": (L, H, dh),
                  "b_V": (L, H, dh), "b_O": (L, D), "W_in": (L, D, F), "b_in": (L, F), "W_out": (L, F, D),
                  "b_out": (L, D), "W_U": (D, V), "b_U": (V,)}
        if c.pos != "absolute":
            del shapes["W_pos"]
            self.assertFalse(hasattr(m, "W_pos"), c.pos)
        for name, shape in shapes.items():
            self.assertEqual(getattr(m, name).shape, shape, name)
            self.assertFalse(getattr(m, name).flags.writeable, name)
        for l in range(L):
            self.assertTrue(np.array_equal(m.W_O[l], sd["blocks.%d.attn.W_O" % l]))
            self.assertTrue(np.array_equal(m.W_in[l], sd["blocks.%d.mlp.W_in" % l]))
        self.assertTrue(np.array_equal(m.W_U, sd["unembed.W_U"]))

    def test_tied_transformer_W_U_is_W_E_transposed(self):
        """--tie-embeddings: the file has embed.W_E and no unembed.W_U; W_U is W_E.T
        (the same numbers), cfg says so, and the logit lens through it gives the logits."""
        with tempfile.TemporaryDirectory() as d:  # the shipped test stories: there in every run of these tests
            tf = os.path.join(d, "tied.safetensors")
            subprocess.run([CLI, "train", os.path.join(MODELS, "tinystories-test.txt"), "--vocab",
                            os.path.join(MODELS, "vocab.txt"), "--arch", "transformer", "--tie-embeddings", "--threads",
                            "2", "--steps", "6", "--test-stories", "5", "--eval-every", "0", "-o", tf],
                           check=True, capture_output=True)
            m = storylm.load(tf)
            sd = m.state_dict()
            self.assertTrue(m.cfg.tie_embeddings)
            self.assertNotIn("unembed.W_U", sd)
            self.assertEqual(sorted(sd), sorted(read_safetensors(tf)[0]))
            self.assertEqual(m.W_U.shape, (m.cfg.d_model, m.cfg.d_vocab))
            self.assertTrue(np.array_equal(m.W_U, sd["embed.W_E"].T))
            self.assertFalse(m.W_U.flags.writeable)
            logits, cache = m.run_with_cache(TEXT)
            self.assertTrue(close(cache["ln_final.hook_normalized"] @ m.W_U + m.b_U, logits))
            self.assertFalse(storylm.load(TRANSFORMER).cfg.tie_embeddings)

    def test_chapter_names(self):
        for path in (CHAPTER, LAYERS2):
            m = storylm.load(path)
            sd = m.state_dict()
            self.assertTrue(np.array_equal(m.W_E, sd["embedding"]))
            self.assertEqual(len(m.W_Q), m.cfg.n_layers)
            self.assertTrue(np.array_equal(m.W_Q[0], sd["query"]))
            if m.cfg.n_layers > 1:
                self.assertTrue(np.array_equal(m.W_V[1], sd["layer2.value"]))
            self.assertTrue(np.array_equal(m.W_in, sd["hidden.weight"].T))
            self.assertTrue(np.array_equal(m.W_U, sd["output.weight"].T))
            self.assertTrue(np.array_equal(m.b_U, sd["output.bias"]))
            self.assertFalse(hasattr(m, "W_O"), "the chapter's network has no output projection")
            with self.assertRaises(AttributeError) as cm:
                m.W_out
            self.assertIn("state_dict", str(cm.exception))

    def test_logit_lens_from_W_U_is_the_cache(self):
        """The last layer's output through W_U and b_U gives the logits the pass gave."""
        for path, last in [(TRANSFORMER, "ln_final.hook_normalized"), (ATTN_ONLY, "ln_final.hook_normalized"),
                           (CHAPTER, "hook_hidden"), (LAYERS2, "hook_hidden")]:
            m = storylm.load(path)
            logits, cache = m.run_with_cache(TEXT)
            self.assertTrue(close(cache[last] @ m.W_U + m.b_U, logits), path)
            self.assertEqual(int((cache[last] @ m.W_U + m.b_U)[-1].argmax()), int(logits[-1].argmax()), path)

    def test_W_E_is_hook_embed(self):
        for path in (TRANSFORMER, ATTN_ONLY, CHAPTER, LAYERS2):
            m = storylm.load(path)
            _, cache = m.run_with_cache(TEXT)
            self.assertTrue(np.array_equal(cache["hook_embed"], m.W_E[m.to_ids(TEXT)]), path)


class LoadStateDict(unittest.TestCase):
    def test_unchanged_weights_keep_every_bit(self):
        for path in (CHAPTER, TRANSFORMER):
            m = storylm.load(path)
            before = m(TEXT)
            m.load_state_dict(m.state_dict())
            self.assertTrue(np.array_equal(m(TEXT), before))

    def test_a_zeroed_head_is_ablate_and_the_saved_file_the_clis(self):
        """W_O[l, h] = 0 (the transformer) or the hidden layer's columns of head
        h (the chapter's network) = 0: the pass gives --ablate's loss, and the
        file saved gives eval's loss of the changed model, bit for bit."""
        cases = [(TRANSFORMER, "blocks.1.attn.W_O", lambda w: w.__setitem__(3, 0), "2:3"),
                 (CHAPTER, "hidden.weight", lambda w: w.__setitem__((slice(None), slice(32 + 3 * 16, 32 + 4 * 16)), 0),
                  "3")]
        for path, name, edit, head in cases:
            m = storylm.load(path)
            w = m.state_dict()[name].copy()
            edit(w)
            m.load_state_dict({name: w}, strict=False)
            same_number(self, m.loss(TEXT), cli("eval", "--text", TEXT, "--json", "-m", path, "--ablate", head)["loss"],
                        path)
            with tempfile.TemporaryDirectory() as d:
                out = os.path.join(d, "edited.safetensors")
                m.save(out)
                self.assertTrue(np.array_equal(read_safetensors(out)[0][name], w))
                same_number(self, m.loss(TEXT), cli("eval", "--text", TEXT, "--json", "-m", out)["loss"], out)
                got = subprocess.run([CLI, "generate", "Lily", "--json", "-m", out, "-n", "20", "-s", "5"],
                                     check=True, capture_output=True, text=True)
                self.assertIn('"text"', got.stdout)

    def test_copies_and_old_views_keep_the_old_weights(self):
        m = storylm.load(CHAPTER)
        before, W_E = m(TEXT), m.W_E
        twin = __import__("copy").copy(m)
        m.load_state_dict({"embedding": W_E * 0.5}, strict=False)
        self.assertFalse(np.array_equal(m(TEXT), before))
        self.assertTrue(np.array_equal(twin(TEXT), before))
        self.assertTrue(np.array_equal(m.W_E, W_E * np.float32(0.5)))
        self.assertFalse(np.array_equal(W_E, m.W_E))

    def test_refusals(self):
        m = storylm.load(CHAPTER)
        sd = {k: v.copy() for k, v in m.state_dict().items()}
        with self.assertRaises(storylm.StorylmError) as cm:
            m.load_state_dict({"embeding": sd["embedding"]}, strict=False)
        self.assertIn("'embeding'", cm.exception.message)
        with self.assertRaises(storylm.StorylmError) as cm:
            m.load_state_dict({"embedding": sd["embedding"]})
        self.assertIn("strict=False", cm.exception.hint)
        with self.assertRaises(ValueError):
            m.load_state_dict({"embedding": sd["embedding"][:5]}, strict=False)
        sd["query"][1, 2, 3] = np.nan
        with self.assertRaises(storylm.StorylmError) as cm:
            m.load_state_dict(sd)
        self.assertIn("'query' holds NaN", cm.exception.message)
        self.assertTrue(np.array_equal(m.state_dict()["query"], read_safetensors(CHAPTER)[0]["query"]))


if __name__ == "__main__":
    unittest.main()
