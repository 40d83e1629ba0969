"""storylm.SAE against the CLI: SAEs trained here in seconds by `storylm sae
train` (TopK and L1 on the small model's hook_hidden, TopK on a tiny
transformer's blocks.1.hook_mlp_out), then read in Python and held to `sae
features --json` (each context token's value, bit for bit) and `sae eval
--json` (the loss with the SAE spliced in), and to SAELens's formulas in numpy."""

import json
import os
import pathlib
import struct
import subprocess
import tempfile
import unittest

import numpy as np

import storylm
from test_storylm import CLI, SMALL, SMALL_STORIES

TEST_STORIES = "20"  # as tests/e2e_python.sh trains the small model
SMALL_SAE = ["--tokens", "20480", "--batch-tokens", "1024", "--seed", "3", "--expansion", "4", "--k", "8",
             "--threads", "2", "--test-stories", TEST_STORIES]


def cli_json(*args):
    return json.loads(subprocess.run([CLI, *args, "--json"], check=True, capture_output=True, text=True).stdout)


def safetensors(path):
    """A safetensors file of F32 tensors as numpy arrays."""
    with open(path, "rb") as f:
        b = f.read()
    n = struct.unpack("<Q", b[:8])[0]
    head = {k: v for k, v in json.loads(b[8:8 + n]).items() if k != "__metadata__"}
    return {k: np.frombuffer(b[8 + n + v["data_offsets"][0]:8 + n + v["data_offsets"][1]], "<f4").reshape(v["shape"])
            for k, v in head.items()}


def test_stories(model):
    """{story index: its ids ([EOS] first and last)} of the held-out stories, as storylm stories gives them."""
    args = [SMALL_STORIES, "-m", model, "--test-stories", TEST_STORIES]
    order = cli_json("stories", *args)["test"]
    lines = subprocess.run([CLI, "stories", *args, "--ids"], check=True, capture_output=True, text=True).stdout
    return {s: np.array(line.split(), np.int32) for s, line in zip(order, lines.splitlines())}


def spliced_ce(model, saes, stories, **kwargs):
    """The mean loss over every predicted token of the stories with the SAEs spliced in (sae eval's ce)."""
    total = sum(model.run_with_saes(ids, saes=saes, return_type="loss", **kwargs) * (len(ids) - 1)
                for ids in stories.values())
    return total / sum(len(ids) - 1 for ids in stories.values())


@unittest.skipUnless(SMALL and SMALL_STORIES, "no small model to train SAEs on (tests/e2e_python.sh gives it)")
class SAE(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        d = cls.tmp.name
        cls.dirs = {"topk": os.path.join(d, "topk.sae"), "l1": os.path.join(d, "l1.sae")}
        for kind, out in cls.dirs.items():
            subprocess.run([CLI, "sae", "train", SMALL_STORIES, "-m", SMALL, "--hook", "hook_hidden", "--kind", kind,
                            "-o", out, *SMALL_SAE], check=True, capture_output=True)
        cls.model = storylm.load(SMALL)
        cls.stories = test_stories(SMALL)

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def test_config_and_weights_are_the_files(self):
        sae = storylm.SAE.load(self.dirs["topk"])
        with open(os.path.join(self.dirs["topk"], "cfg.json")) as f:
            cfg = json.load(f)
        self.assertEqual((sae.cfg.architecture, sae.cfg.d_in, sae.cfg.d_sae, sae.cfg.k, sae.cfg.hook_name),
                         ("topk", 128, 512, 8, "hook_hidden"))
        self.assertEqual(sae.cfg["model_name"], cfg["model_name"])
        w = safetensors(os.path.join(self.dirs["topk"], "sae_weights.safetensors"))
        for name, arr in sae.state_dict().items():
            self.assertTrue(np.array_equal(arr, w[name]), name)
            self.assertFalse(arr.flags.writeable, name)
        self.assertEqual(storylm.SAE.load(self.dirs["l1"]).cfg.architecture, "standard")
        for path in (os.fsencode(self.dirs["topk"]), pathlib.Path(self.dirs["topk"])):  # a path as bytes or Path
            self.assertTrue(np.array_equal(storylm.SAE.load(path).W_dec, sae.W_dec), path)

    def test_encodings_are_sae_features(self):
        """Each context token's value in sae features --json is sae.encode's of that story's
        activations, bit for bit; the firing value (from a pass over several stories at once)
        to float rounding."""
        sae = storylm.SAE.load(self.dirs["topk"])
        f = cli_json("sae", "features", self.dirs["topk"], SMALL_STORIES, "-m", SMALL, "--test-stories", TEST_STORIES,
                     "--latents", "4", "--threads", "2")
        checked = 0
        for feat in f["features"]:
            j = feat["latent"]
            for c in feat["contexts"]:
                _, cache = self.model.run_with_cache(self.stories[c["story"]], names_filter="hook_hidden")
                z = sae.encode(cache["hook_hidden"])
                self.assertLessEqual(int((z > 0).sum(axis=1).max()), 8)
                for t in c["tokens"]:
                    self.assertEqual(z[t["position"], j], np.float32(t["value"]), (j, c["story"], t))
                    checked += 1
                self.assertAlmostEqual(float(z[c["position"], j]), c["value"], delta=1e-5 * abs(c["value"]))
        self.assertGreater(checked, 10)

    def test_spliced_loss_is_sae_eval(self):
        """run_with_saes's loss over the held-out stories is sae eval's ce_loss_with_sae, for TopK and L1."""
        for kind, out in self.dirs.items():
            sae = storylm.SAE.load(out)
            e = cli_json("sae", "eval", out, SMALL_STORIES, "-m", SMALL, "--test-stories", TEST_STORIES,
                         "--threads", "2")
            self.assertAlmostEqual(spliced_ce(self.model, [], self.stories), e["ce_loss_without_sae"], delta=1e-6)
            self.assertAlmostEqual(spliced_ce(self.model, [sae], self.stories), e["ce_loss_with_sae"], delta=1e-6)
            self.assertNotAlmostEqual(e["ce_loss_with_sae"], e["ce_loss_without_sae"], delta=1e-4)  # it did splice
            ids = next(iter(self.stories.values()))
            by_hook = self.model.run_with_hooks(ids, fwd_hooks=[("hook_hidden", sae.splice)], return_type="loss")
            self.assertEqual(by_hook, self.model.run_with_saes(ids, saes=sae, return_type="loss"), kind)

    def test_numpy_formulas(self):
        """encode, decode and forward are SAELens's formulas (numpy's sums in another order:
        to 1e-5), forward is decode(encode(x)) bit for bit, any leading shape goes."""
        ids = next(iter(self.stories.values()))
        _, cache = self.model.run_with_cache(ids, names_filter="hook_hidden")
        x = cache["hook_hidden"]
        for kind, out in self.dirs.items():
            sae = storylm.SAE.load(out)
            pre = (x - sae.b_dec) @ sae.W_enc + sae.b_enc
            if kind == "topk":
                keep = np.argsort(-pre, axis=1, kind="stable")[:, :sae.cfg.k]
                top = np.zeros_like(pre)
                np.put_along_axis(top, keep, np.take_along_axis(pre, keep, 1), 1)
                pre = top
            want = np.maximum(pre, 0)
            z = sae.encode(x)
            np.testing.assert_allclose(z, want, rtol=1e-5, atol=1e-5, err_msg=kind)
            np.testing.assert_allclose(sae.decode(z), z @ sae.W_dec + sae.b_dec, rtol=1e-5, atol=1e-5, err_msg=kind)
            self.assertTrue(np.array_equal(sae.forward(x), sae.decode(z)), kind)
            self.assertTrue(np.array_equal(sae.encode(x[None]), z[None]), kind)  # the same rows, another shape
            np.testing.assert_allclose(sae.encode(x[:4].reshape(2, 2, 128)), z[:4].reshape(2, 2, 512), rtol=1e-5,
                                       atol=1e-5, err_msg=kind)  # other rows beside them: to rounding
            self.assertEqual(sae.encode(x[:0]).shape, (0, sae.cfg.d_sae))

    def test_refusals(self):
        with self.assertRaisesRegex(storylm.StorylmError, "no SAE folder"):
            storylm.SAE.load(os.path.join(self.tmp.name, "nowhere"))
        sae = storylm.SAE.load(self.dirs["topk"])
        with self.assertRaisesRegex(storylm.StorylmError, r"expected an array \[\.\.\., 128\]"):
            sae.encode(np.zeros((3, 127), np.float32))
        with self.assertRaisesRegex(storylm.StorylmError, r"expected an array \[\.\.\., 512\]"):
            sae.decode(np.zeros(128, np.float32))
        sae.close()
        with self.assertRaisesRegex(storylm.StorylmError, "closed"):
            sae.encode(np.zeros((1, 128), np.float32))


@unittest.skipUnless(SMALL_STORIES, "no stories to train on (tests/e2e_python.sh gives them)")
class SAETransformer(unittest.TestCase):
    def test_mlp_out_spliced_is_sae_eval(self):
        """A transformer's blocks.1.hook_mlp_out, no hook point of its own: sae.hooks() keeps
        resid_mid and writes resid_post = resid_mid + forward(resid_post - resid_mid), as sae
        eval splices it."""
        with tempfile.TemporaryDirectory() as d:
            tf, out = os.path.join(d, "tf.safetensors"), os.path.join(d, "mlp1.sae")
            subprocess.run([CLI, "train", SMALL_STORIES, "--arch", "transformer", "--threads", "2", "--steps", "20",
                            "--seed", "5", "--test-stories", TEST_STORIES, "--eval-every", "0", "-o", tf],
                           check=True, capture_output=True)
            subprocess.run([CLI, "sae", "train", SMALL_STORIES, "-m", tf, "--hook", "blocks.1.hook_mlp_out", "-o", out,
                            *SMALL_SAE], check=True, capture_output=True)
            sae, model = storylm.SAE.load(out), storylm.load(tf)
            self.assertEqual([h[0] for h in sae.hooks()], ["blocks.1.hook_resid_mid", "blocks.1.hook_resid_post"])
            e = cli_json("sae", "eval", out, SMALL_STORIES, "-m", tf, "--test-stories", TEST_STORIES, "--threads", "2")
            stories = test_stories(tf)
            self.assertAlmostEqual(spliced_ce(model, [sae], stories), e["ce_loss_with_sae"], delta=1e-6)
            two = list(stories.values())[:2]  # a batch runs row by row: each row keeps its own resid_mid
            self.assertEqual(list(model.run_with_saes(two, saes=[sae], return_type="loss")),
                             [model.run_with_saes(ids, saes=[sae], return_type="loss") for ids in two])


if __name__ == "__main__":
    unittest.main()
