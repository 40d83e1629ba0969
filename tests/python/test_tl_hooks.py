"""TransformerLens's hook points of the transformer and attn-only: each one
declared, read at its place in the pass (equal to a direct computation from
the other points and the weights), and written (the rest of the pass reads
the change as a direct computation says). Run by tests/e2e_python.sh with
test_storylm.py's environment."""

import os
import subprocess
import tempfile
import unittest

import numpy as np

from test_cache import close, layernorm
from test_storylm import CLI, MODELS, TEXT, cli, model, same_number

TRANSFORMER, ATTN_ONLY, LAYERS2 = (os.path.join(MODELS, n + ".safetensors") for n in (
    "tinystories-transformer", "tinystories-induction-attn-only", "tinystories-layers2"))
BLOCK = {"transformer": ["hook_resid_pre", "ln1.hook_scale", "ln1.hook_normalized", "attn.hook_q", "attn.hook_k",
                         "attn.hook_v", "attn.hook_attn_scores", "attn.hook_pattern", "attn.hook_z",
                         "attn.hook_result", "hook_attn_out", "hook_resid_mid", "ln2.hook_scale",
                         "ln2.hook_normalized", "mlp.hook_pre", "mlp.hook_post", "hook_mlp_out", "hook_resid_post"],
         "attn-only": ["hook_resid_pre", "ln1.hook_scale", "ln1.hook_normalized", "attn.hook_q", "attn.hook_k",
                       "attn.hook_v", "attn.hook_attn_scores", "attn.hook_pattern", "attn.hook_z",
                       "attn.hook_result", "hook_attn_out", "hook_resid_post"]}


def declared(m, absolute=False):
    """The names TransformerLens's HookedTransformer has for m (and storylm's hook_logits)."""
    before = ["hook_embed"] + (["hook_pos_embed"] if absolute else [])
    blocks = ["blocks.%d.%s" % (l, n) for l in range(m.cfg.n_layers) for n in BLOCK[m.cfg.arch]]
    return before + blocks + ["ln_final.hook_scale", "ln_final.hook_normalized", "hook_logits"]


def ln_scale(x):
    x64 = x.astype(np.float64)
    return np.sqrt(((x64 - x64.mean(-1, keepdims=True)) ** 2).mean(-1, keepdims=True) + float(np.float32(1e-5)))


_ABSOLUTE = []


def absolute_model():
    """A transformer with a learned position table (none is shipped): one training step from the seed."""
    if not _ABSOLUTE:
        folder = tempfile.mkdtemp()
        out = os.path.join(folder, "absolute.safetensors")
        subprocess.run([CLI, "train", os.path.join(MODELS, "tinystories-test.txt"), "--arch", "transformer",
                        "--position-scheme", "absolute", "--steps", "1", "--vocab", os.path.join(MODELS, "vocab.txt"),
                        "--eval-every", "0", "--test-stories", "5", "--threads", "1", "-o", out],
                       check=True, capture_output=True)
        _ABSOLUTE.append(out)
    return model(_ABSOLUTE[0])


class Declared(unittest.TestCase):
    def test_every_transformerlens_point_in_the_pass_order(self):
        for path in (TRANSFORMER, ATTN_ONLY):
            m = model(path)
            self.assertEqual(m.hook_names, declared(m), path)
        m = absolute_model()
        self.assertEqual(m.hook_names, declared(m, absolute=True))

    def test_hooks_that_return_their_input_keep_every_bit(self):
        for m in (model(TRANSFORMER), model(ATTN_ONLY), absolute_model()):
            seen = []

            def same(x, hook):
                seen.append(hook.name)
                return x.copy() if len(seen) % 2 else None

            hooks = [(n, same) for n in m.hook_names]
            self.assertTrue(np.array_equal(m.run_with_hooks(TEXT, fwd_hooks=hooks), m(TEXT)), m.path)
            self.assertEqual(m.loss(TEXT, fwd_hooks=hooks), m.loss(TEXT), m.path)
            self.assertEqual(seen[:len(hooks)], m.hook_names, "every point is reached, in the declared order")


class Read(unittest.TestCase):
    """Each point equals what TransformerLens computes there from the others and the weights."""

    def check_block(self, m, c, l, absolute=False):
        g = lambda n: c["blocks.%d.%s" % (l, n)]  # noqa: E731
        pre = g("hook_resid_pre")
        self.assertTrue(close(g("ln1.hook_scale"), ln_scale(pre), 1e-6))
        self.assertTrue(np.array_equal(g("ln1.hook_normalized"),
                                       layernorm(pre, m.state_dict()["blocks.%d.ln1.w" % l],
                                                 m.state_dict()["blocks.%d.ln1.b" % l])))
        scores, pattern = g("attn.hook_attn_scores"), g("attn.hook_pattern")
        T = pre.shape[0]
        self.assertTrue(np.isneginf(scores[:, np.triu_indices(T, 1)[0], np.triu_indices(T, 1)[1]]).all())
        e = np.exp(scores - scores.max(-1, keepdims=True))
        self.assertTrue(close(e / e.sum(-1, keepdims=True), pattern, 1e-6), "softmax(scores) is the pattern")
        result = np.einsum("thd,hdm->thm", g("attn.hook_z"), m.W_O[l])
        self.assertTrue(close(g("attn.hook_result"), result, 1e-5))
        self.assertTrue(close(g("hook_attn_out"), result.sum(1) + m.b_O[l], 1e-5))
        mid = g("hook_resid_mid") if m.cfg.arch == "transformer" else g("hook_resid_post")
        self.assertTrue(close(mid, pre + g("hook_attn_out"), 1e-5))
        if m.cfg.arch != "transformer":
            return
        self.assertTrue(close(g("ln2.hook_scale"), ln_scale(mid), 1e-6))
        self.assertTrue(close(g("mlp.hook_pre"), g("ln2.hook_normalized") @ m.W_in[l] + m.b_in[l], 1e-5))
        self.assertTrue(close(g("hook_mlp_out"), g("mlp.hook_post") @ m.W_out[l] + m.b_out[l], 1e-5))
        self.assertTrue(close(g("hook_resid_post"), mid + g("hook_mlp_out"), 1e-5))

    def test_each_point_is_its_direct_computation(self):
        for m in (model(TRANSFORMER), model(ATTN_ONLY), absolute_model()):
            _, c = m.run_with_cache(TEXT)
            for l in range(m.cfg.n_layers):
                self.check_block(m, c, l)
            last = c["blocks.%d.hook_resid_post" % (m.cfg.n_layers - 1)]
            self.assertTrue(close(c["ln_final.hook_scale"], ln_scale(last), 1e-6))

    def test_scores_are_q_k_over_sqrt_d_head_plus_the_distance_score(self):
        m = model(ATTN_ONLY)  # --position-scheme distance: a learned score per distance back
        _, c = m.run_with_cache(TEXT)
        q, k = c["blocks.1.attn.hook_q"], c["blocks.1.attn.hook_k"]
        T = q.shape[0]
        dist = m.state_dict()["blocks.1.attn.distance"]
        want = np.einsum("thd,uhd->htu", q, k) / np.sqrt(m.cfg.d_head)
        want = want + dist[:, np.maximum(np.arange(T)[:, None] - np.arange(T)[None, :], 0)]
        lower = np.tril(np.ones((T, T), bool))
        self.assertTrue(close(c["blocks.1.attn.hook_attn_scores"][:, lower], want[:, lower], 1e-5))

    def test_pos_embed_is_the_table_row(self):
        m = absolute_model()
        _, c = m.run_with_cache(TEXT)
        T = c["hook_embed"].shape[0]
        self.assertTrue(np.array_equal(c["hook_pos_embed"], m.W_pos[:T]))
        self.assertTrue(np.array_equal(c["blocks.0.hook_resid_pre"], c["hook_embed"] + c["hook_pos_embed"]))


def final_logits(m, resid):
    """logits from the last block's resid_post, as the library's LN_final and unembedding."""
    sd = m.state_dict()
    return layernorm(resid, sd["ln_final.w"], sd["ln_final.b"]) @ m.W_U + m.b_U


class Write(unittest.TestCase):
    """A changed point is what the rest of the pass reads."""

    def test_writing_mlp_pre_changes_the_output_as_computed_directly(self):
        m = model(TRANSFORMER)
        l, neurons = m.cfg.n_layers - 1, [3, 17, 200]
        _, plain = m.run_with_cache(TEXT)

        def silence(x, hook):
            x[:, neurons] = 0

        logits, c = m.run_with_cache(TEXT, fwd_hooks=[("blocks.%d.mlp.hook_pre" % l, silence)])
        post = plain["blocks.%d.mlp.hook_post" % l].copy()
        post[:, neurons] = 0  # gelu(0)
        self.assertTrue(np.array_equal(c["blocks.%d.mlp.hook_post" % l], post))
        resid = plain["blocks.%d.hook_resid_mid" % l] + post @ m.W_out[l] + m.b_out[l]
        self.assertTrue(close(logits, final_logits(m, resid), 1e-4))
        self.assertFalse(close(logits, plain["hook_logits"], 1e-4), "the change reached the logits")

    def test_zeroing_a_heads_z_is_ablate_bit_for_bit_and_its_result_to_rounding(self):
        for path in (TRANSFORMER, ATTN_ONLY):
            m = model(path)
            for l, h in ((0, 3), (1, 5)):
                want = cli("eval", "--text", TEXT, "--ablate", "%d:%d" % (l + 1, h), "--json", "-m", path)["loss"]

                def zero(x, hook, h=h):
                    x[:, h] = 0

                same_number(self, m.loss(TEXT, fwd_hooks=[("blocks.%d.attn.hook_z" % l, zero)]), want, path)
                by_result = m.loss(TEXT, fwd_hooks=[("blocks.%d.attn.hook_result" % l, zero)])
                self.assertAlmostEqual(by_result, want, delta=1e-5 * abs(want), msg=path)
                self.assertNotAlmostEqual(by_result, m.loss(TEXT), delta=1e-5 * abs(want), msg=path)

    def test_written_scores_make_the_pattern_and_z(self):
        m = model(ATTN_ONLY)

        def flat(s, hook):
            s[2][np.isfinite(s[2])] = 0.0  # head 2 reads every key alike

        _, c = m.run_with_cache(TEXT, fwd_hooks=[("blocks.1.attn.hook_attn_scores", flat)])
        p = c["blocks.1.attn.hook_pattern"][2]
        T = p.shape[0]
        self.assertTrue(close(p, np.tril(np.ones((T, T))) / np.arange(1, T + 1)[:, None], 1e-6))
        z = np.einsum("tu,ud->td", p, c["blocks.1.attn.hook_v"][:, 2])
        self.assertTrue(close(c["blocks.1.attn.hook_z"][:, 2], z, 1e-5))

    def test_written_scale_normalises_again(self):
        m = model(TRANSFORMER)

        def double(s, hook):
            return s * 2

        _, c = m.run_with_cache(TEXT, fwd_hooks=[("ln_final.hook_scale", double)])
        _, plain = m.run_with_cache(TEXT)
        sd = m.state_dict()
        want = (plain["ln_final.hook_normalized"] - sd["ln_final.b"]) / 2 + sd["ln_final.b"]
        self.assertTrue(close(c["ln_final.hook_normalized"], want, 1e-5))
        self.assertTrue(close(c["hook_logits"], c["ln_final.hook_normalized"] @ m.W_U + m.b_U, 1e-4))

    def test_written_attn_out_and_mlp_out_are_added_to_the_residual(self):
        for path in (TRANSFORMER, ATTN_ONLY):
            m = model(path)
            last = m.cfg.n_layers - 1
            zero = lambda x, hook: np.zeros_like(x)  # noqa: E731
            hooks = [("blocks.%d.hook_attn_out" % last, zero)]
            if m.cfg.arch == "transformer":
                hooks.append(("blocks.%d.hook_mlp_out" % last, zero))
            logits, c = m.run_with_cache(TEXT, fwd_hooks=hooks)
            pre = c["blocks.%d.hook_resid_pre" % last]
            self.assertTrue(np.array_equal(c["blocks.%d.hook_resid_post" % last], pre), path)
            self.assertTrue(close(logits, final_logits(m, pre), 1e-4), path)

    def test_a_changed_result_is_what_attn_out_reads(self):
        m = model(TRANSFORMER)

        def double(r, hook):
            return r * 2

        _, plain = m.run_with_cache(TEXT)
        _, c = m.run_with_cache(TEXT, fwd_hooks=[("blocks.0.attn.hook_result", double)])
        want = 2 * plain["blocks.0.attn.hook_result"].sum(1) + m.b_O[0]
        self.assertTrue(close(c["blocks.0.hook_attn_out"], want, 1e-5))
        self.assertTrue(close(c["blocks.0.hook_resid_mid"], c["blocks.0.hook_resid_pre"] + want, 1e-5))

    def test_written_pos_embed_moves_the_residual(self):
        m = absolute_model()

        def drop(x, hook):
            return np.zeros_like(x)

        _, c = m.run_with_cache(TEXT, fwd_hooks=[("hook_pos_embed", drop)])
        self.assertTrue(close(c["blocks.0.hook_resid_pre"], c["hook_embed"], 1e-6))


class ChapterScores(unittest.TestCase):
    """The chapter's network's counterpart: each layer's attn.hook_attn_scores."""

    def test_scores_give_the_pattern_and_are_q_k_plus_the_distance_score(self):
        m = model(LAYERS2)
        _, c = m.run_with_cache(TEXT)
        for l in range(m.cfg.n_layers):
            s, p = c["blocks.%d.attn.hook_attn_scores" % l], c["blocks.%d.attn.hook_pattern" % l]
            e = np.exp(s - s.max(-1, keepdims=True))
            self.assertTrue(close(e / e.sum(-1, keepdims=True), p, 1e-6), l)
            q, k = c["blocks.%d.attn.hook_q" % l], c["blocks.%d.attn.hook_k" % l]  # scaled-dot, distance
            content = np.einsum("thd,uhd->htu", q, k) / np.sqrt(m.cfg.key_dim)
            lower = np.tril(np.ones(content.shape[1:], bool))
            rest = (s - content)[:, lower]
            dist = c["blocks.%d.attn.hook_distance_score" % l][:, lower]
            self.assertTrue(close(rest, dist, 1e-5), l)

    def test_written_scores_make_the_pattern(self):
        m = model(LAYERS2)

        def flat(s, hook):
            s[4][np.isfinite(s[4])] = 0.0

        _, c = m.run_with_cache(TEXT, fwd_hooks=[("blocks.0.attn.hook_attn_scores", flat)])
        p = c["blocks.0.attn.hook_pattern"][4]
        T = p.shape[0]
        self.assertTrue(close(p, np.tril(np.ones((T, T))) / np.arange(1, T + 1)[:, None], 1e-6))
        z = np.einsum("tu,ud->td", p, c["blocks.0.attn.hook_v"][:, 4])
        self.assertTrue(close(c["blocks.0.attn.hook_z"][:, 4], z, 1e-5))


if __name__ == "__main__":
    unittest.main()
