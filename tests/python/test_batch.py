"""Batches in Python: a list of texts, of id sequences, or a [batch, pos]
array gives per row the single call's numbers, bit for bit (run by
tests/e2e_python.sh with test_storylm.py's environment)."""

import os
import unittest

import numpy as np

import storylm
from test_storylm import MODELS, TEXT

PATHS = [os.path.join(MODELS, n + ".safetensors")
         for n in ("tinystories", "tinystories-layers2", "tinystories-transformer", "tinystories-induction-attn-only")]
TEXTS = [TEXT, "Lily found a ball.", "Tom ran to the big tree and saw a bird."]


def same(a, b):
    return a.shape == b.shape and np.array_equal(a.view(np.uint32), b.view(np.uint32))


class Batches(unittest.TestCase):
    def test_ragged_texts_are_the_single_calls_padded_on_the_right(self):
        for path in PATHS:
            m = storylm.load(path)
            logits = m(TEXTS)
            lengths = [len(m.to_ids(t)) for t in TEXTS]
            self.assertEqual(logits.shape, (len(TEXTS), max(lengths), m.cfg.vocab_size))
            mask = m.attention_mask(TEXTS)
            self.assertEqual(mask.sum(1).tolist(), lengths)
            for i, text in enumerate(TEXTS):
                self.assertTrue(same(logits[i, :lengths[i]], m(text)), "%s row %d" % (path, i))
                self.assertFalse(logits[i, lengths[i]:].any(), "padding holds 0")
            losses = m.loss(TEXTS)
            self.assertEqual(losses.tolist(), [m.loss(t) for t in TEXTS], path)

    def test_a_batch_cache_has_the_batch_axis_and_each_rows_bits(self):
        for path in PATHS:
            m = storylm.load(path)
            _, cache = m.run_with_cache(TEXTS)
            self.assertTrue(cache.has_batch_dim)
            self.assertEqual(sorted(cache), sorted(m.hook_names))
            for i, text in enumerate(TEXTS):
                _, one = m.run_with_cache(text)
                T = len(m.to_ids(text))
                for name, value in one.items():
                    got = cache[name][i]
                    if name.endswith(("hook_pattern", "hook_distance_score", "hook_attn_scores")):
                        self.assertTrue(same(got[:, :T, :T], value), "%s %s row %d" % (path, name, i))
                        self.assertFalse(got[:, T:].any() or got[:, :, T:].any())
                    else:
                        self.assertTrue(same(got[:T], value), "%s %s row %d" % (path, name, i))
                        self.assertFalse(got[T:].any())

    def test_a_batch_of_ids_runs_as_given(self):
        for path in PATHS:
            m = storylm.load(path)
            ids = m.to_ids(TEXT)
            tokens = np.stack([ids[:12], ids[6:18]])
            logits = m(tokens)
            for i in range(2):
                self.assertTrue(same(logits[i], m(tokens[i])))
            self.assertTrue(same(m([ids[:5].tolist(), ids[:9].tolist()])[1], m(ids[:9])))
            self.assertEqual(m.loss(tokens).tolist(), [m.loss(tokens[0]), m.loss(tokens[1])])

    def test_hooks_run_row_by_row(self):
        """A hook in a batch sees one row at a time (hook.row), and zeroing a head is --ablate's row by row."""
        m = storylm.load(PATHS[0])
        rows = []

        def zero(z, hook):
            rows.append(hook.row)
            z[:, 3, :] = 0

        got = m.run_with_hooks(TEXTS, [("blocks.0.attn.hook_z", zero)], return_type="both")
        self.assertEqual(rows, [0, 1, 2])
        want = m(TEXTS, ablate=3)
        self.assertTrue(same(got[0], want))
        self.assertEqual(got[1].tolist(), m.loss(TEXTS, ablate=3).tolist())

    def test_tokens_of_a_batch(self):
        m = storylm.load(PATHS[0])
        self.assertEqual([x.tolist() for x in m.tokenize(TEXTS)], [m.tokenize(t).tolist() for t in TEXTS])
        self.assertEqual(m.to_str_tokens(TEXTS), [m.to_str_tokens(t) for t in TEXTS])
        tokens = m.to_tokens(TEXTS)
        self.assertEqual(tokens.shape, m.attention_mask(TEXTS).shape)
        self.assertEqual(m.decode(tokens[:, :5]), [m.decode(t[:5]) for t in tokens])
        with self.assertRaises(storylm.StorylmError):
            m([])
        with self.assertRaises(storylm.StorylmError):
            m(["a text", [1, 2]])

    def test_generate_takes_a_list_of_prompts(self):
        m = storylm.load(PATHS[0])
        got = m.generate(["Lily", "Tom"], max_tokens=10, seed=4)
        self.assertEqual(got, [m.generate("Lily", max_tokens=10, seed=4), m.generate("Tom", max_tokens=10, seed=4)])


if __name__ == "__main__":
    unittest.main()
