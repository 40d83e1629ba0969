"""The Python package against the CLI's --json: run by tests/e2e_python.sh
with Debian's python3, the package imported from an installed prefix and the
CLI of the same prefix in $STORYLM_PROGRAM. Every number the API gives is the
CLI's, bit for bit where both compute it the same way."""

import copy
import functools
import gc
import json
import math
import os
import pickle
import pathlib
import subprocess
import sys
import tempfile
import threading
import time
import unittest
import unittest.mock

import numpy as np

import storylm

CLI = os.environ["STORYLM_PROGRAM"]
SOURCE = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
MODELS = os.path.join(SOURCE, "models")
SHIPPED = ["tinystories", "tinystories-layers2", "tinystories-window8", "tinystories-plain", "tinystories-wd-ema"]
SMALL = os.environ.get("STORYLM_SMALL_MODEL")
SMALL_STORIES = os.environ.get("STORYLM_SMALL_STORIES")
TEXT = "Lily and Tom went to the park. Lily gave the ball to Tom. Tom was happy and said thank you."
sys.path.insert(0, os.path.join(SOURCE, "scripts"))
from read_safetensors import load as read_safetensors  # noqa: E402


@functools.lru_cache(maxsize=None)
def cli(*args):
    """The CLI's --json answer (asked once for the same arguments; treat it as read-only)."""
    out = subprocess.run([CLI, *args], check=True, capture_output=True, text=True).stdout
    return json.loads(out)


def model_paths():
    paths = [os.path.join(MODELS, n + ".safetensors") for n in SHIPPED]
    return paths + ([SMALL] if SMALL else [])


def same_number(test, py, printed, what):
    """py equals the number the CLI's JSON printed (src/report/report.c): a
    float the network computed is printed to 9 digits, which read back as
    exactly that float; any other double to 15 digits when they read back
    within a rounding of it, else 17."""
    if float(np.float32(py)) == py:
        test.assertEqual(float(np.float32(printed)), py, what)
        return
    short = float("%.15g" % py)
    close = abs(short - py) <= max(abs(short), abs(py)) * sys.float_info.epsilon
    test.assertEqual(short if close else py, printed, what)


_LOADED = {}


def model(path):
    if path not in _LOADED:
        _LOADED[path] = storylm.load(path)
    return _LOADED[path]


class LoadAndConfig(unittest.TestCase):
    def test_config_is_info_json(self):
        for path in model_paths():
            m, info = model(path), cli("info", "--json", "-m", path)
            for key, value in info["config"].items():
                self.assertEqual(m.cfg[key], value, "%s: cfg[%s]" % (path, key))
            for key, value in info["model"].items():
                if key != "file_bytes":
                    self.assertEqual(m.cfg[key], value, "%s: cfg[%s]" % (path, key))
            self.assertEqual(m.cfg.n_layers, info["config"].get("layers", 1))
            self.assertEqual(m.cfg.d_model, info["config"]["row_dim"])

    def test_a_file_that_is_not_a_model_raises(self):
        with tempfile.NamedTemporaryFile("w", suffix=".safetensors", delete=False) as f:
            f.write("Once upon a time there was no model in this file.\n")
        try:
            with self.assertRaises(storylm.StorylmError) as cm:
                storylm.load(f.name)
            self.assertIn(f.name, str(cm.exception))
            self.assertTrue(cm.exception.message)
        finally:
            os.unlink(f.name)

    def test_a_missing_file_raises_with_a_hint(self):
        with self.assertRaises(storylm.StorylmError) as cm:
            storylm.load("/nonexistent/model.safetensors")
        self.assertIn("/nonexistent/model.safetensors", cm.exception.message)
        self.assertIn("storylm.train(", cm.exception.hint)  # Python's words, not the CLI's --model
        self.assertNotIn("--model", cm.exception.hint)

    def test_a_shipped_model_loads_by_its_short_name(self):
        # as the CLI's -m does: "transformer" is models/tinystories-transformer.safetensors
        self.assertEqual(storylm.load("transformer").cfg.arch, "transformer")
        self.assertEqual(storylm.load("tinystories").cfg.arch, "attention")
        with self.assertRaises(storylm.StorylmError) as cm:
            storylm.load("no-such-model")
        self.assertIn("short name", cm.exception.hint)

    def test_pickling_says_what_to_do(self):
        with self.assertRaises(TypeError) as cm:
            pickle.dumps(storylm.load())
        self.assertIn("storylm.load", str(cm.exception))

    def test_no_model_anywhere_is_said_in_pythons_words(self):
        here = os.getcwd()
        with tempfile.TemporaryDirectory() as d, unittest.mock.patch("storylm.model._data_folders",
                                                                     return_value=[d]):
            os.chdir(d)
            try:
                with self.assertRaises(storylm.StorylmError) as cm:
                    storylm.load()
            finally:
                os.chdir(here)
        said = cm.exception.message + cm.exception.hint
        self.assertIn(os.path.join(d, "models", "tinystories.safetensors"), said)
        self.assertIn("storylm.load", cm.exception.hint)
        self.assertNotIn("--model", said)  # the CLI's flag
        self.assertNotIn("/../", said)

    def test_the_shipped_model_by_default(self):
        here = os.getcwd()
        with tempfile.TemporaryDirectory() as d:
            os.chdir(d)
            try:
                m = storylm.load()
            finally:
                os.chdir(here)
        want = read_safetensors(os.path.join(MODELS, "tinystories.safetensors"))[0]["embedding"]
        got = read_safetensors(m.path)[0]["embedding"]
        self.assertTrue(np.array_equal(want, got), m.path)


class Tokens(unittest.TestCase):
    def test_tokenize_is_the_clis(self):
        m = model(model_paths()[0])
        for text in [TEXT, "Zarko ate a crêpe!", "", "  \n"]:
            want = [t["id"] for t in cli("tokenize", "--json", "-m", m.path, text)["tokens"]]
            self.assertEqual(m.tokenize(text).tolist(), want, text)
            self.assertEqual(m.tokenizer.encode(text).tolist(), want, text)
            pieces = [t["piece"] for t in cli("tokenize", "--json", "-m", m.path, text)["tokens"]]
            self.assertEqual(m.to_str_tokens(text), ["[EOS]"] + pieces, text)
        self.assertEqual(m.tokenizer.vocab, open(os.path.join(MODELS, "vocab.txt"), encoding="utf-8").read().split())

    def test_decode_gives_the_text_back(self):
        m = model(model_paths()[0])
        ids = m.tokenize("lily found a red ball.")
        self.assertEqual(m.decode(ids), "lily found a red ball.")
        self.assertEqual(m.decode([m.tokenizer.eos_id] + ids.tolist()), "lily found a red ball.")
        with self.assertRaises(storylm.StorylmError):
            m.decode([m.cfg.vocab_size + 5])

    def test_bad_ids_raise(self):
        m = model(model_paths()[0])
        with self.assertRaises(storylm.StorylmError):
            m([1, 2, m.cfg.vocab_size])
        with self.assertRaises(storylm.StorylmError):
            m([[[1, 2]]])  # [[1, 2]] is a batch of one row
        with self.assertRaises(storylm.StorylmError):
            m.loss(b"bytes are not a text")


class LogitsAndLoss(unittest.TestCase):
    def test_loss_is_eval_text(self):
        for path in model_paths():
            m = model(path)
            for text in [TEXT, "Lily found a ball."]:
                got = m.loss(text)
                want = cli("eval", "--text", text, "--json", "-m", path)
                same_number(self, got, want["loss"], path)
                self.assertAlmostEqual(m.loss_per_char(text), want["loss_per_char"], places=8, msg=path)
                self.assertAlmostEqual(m.loss_per_char([text, text])[1], want["loss_per_char"], places=8, msg=path)

    def test_logits_give_evals_probabilities_and_ranks(self):
        for path in model_paths():
            m = model(path)
            logits = m(TEXT)
            ids = m.to_ids(TEXT)
            self.assertEqual(logits.shape, (len(ids), m.cfg.vocab_size))
            self.assertEqual(logits.dtype, np.float32)
            rows = cli("eval", "--text", TEXT, "--json", "-m", path)["tokens"]
            for t, row in enumerate(rows):
                x = logits[t].astype(np.float64)
                p = np.exp(x[row["target_id"]] - x.max()) / np.exp(x - x.max()).sum()
                self.assertAlmostEqual(p / row["probability"], 1.0, delta=1e-5, msg="%s position %d" % (path, t))
                x, tid = logits[t], row["target_id"]  # ranked as argmax takes it: a tie with an earlier id is above
                self.assertEqual(int((x > x[tid]).sum() + (x[:tid] == x[tid]).sum()) + 1, row["rank"])

    def test_ids_run_as_given(self):
        m = model(model_paths()[0])
        self.assertTrue(np.array_equal(m(TEXT), m(m.to_ids(TEXT).tolist())))


class Cache(unittest.TestCase):
    def test_portable_kernels(self):
        """load(kernels="portable"): the logits of `storylm cache --kernels portable`, bit for bit,
        which the default kernels' are not on every model; another name is refused."""
        differ = False
        for path in model_paths():
            if model(path).cfg.arch != "attention":  # cache's networks
                continue
            m = storylm.load(path, kernels="portable")
            with tempfile.TemporaryDirectory() as d:
                out = os.path.join(d, "cache.safetensors")
                subprocess.run([CLI, "cache", TEXT, "-o", out, "-m", path, "--kernels", "portable"], check=True,
                               capture_output=True)
                cached = read_safetensors(out)[0]
            want = cached["logits" if "logits" in cached else "hook_logits"]  # a model of several layers: hook names
            self.assertTrue(np.array_equal(m(TEXT), want), path)
            self.assertTrue(np.array_equal(copy.copy(m)(TEXT), want), path)
            differ |= not np.array_equal(model(path)(TEXT), want)
            m.close()
        self.assertTrue(differ, "the default kernels gave the portable ones' logits on every model")
        with self.assertRaises(storylm.StorylmError) as caught:
            storylm.load(model_paths()[0], kernels="fast")
        self.assertIn("portable", str(caught.exception))
        with self.assertRaises(TypeError):
            storylm.load(model_paths()[0], kernels=1)

    def test_cache_is_storylm_cache(self):
        """run_with_cache's arrays are the bits `storylm cache` writes."""
        for path in model_paths():
            m = model(path)
            if m.cfg.arch != "attention":
                continue
            if m.cfg.n_layers > 1:  # every hook point by its name, as run_with_cache names it
                with tempfile.TemporaryDirectory() as d:
                    out = os.path.join(d, "cache.safetensors")
                    subprocess.run([CLI, "cache", TEXT, "-o", out, "-m", path], check=True, capture_output=True)
                    want = read_safetensors(out)[0]
                logits, cache = m.run_with_cache(TEXT)
                self.assertEqual(sorted(cache), sorted(k for k in want if k.startswith(("hook_", "blocks."))))
                for name, got in cache.items():
                    self.assertTrue(np.array_equal(got, want[name]), name)
                continue
            with tempfile.TemporaryDirectory() as d:
                out = os.path.join(d, "cache.safetensors")
                subprocess.run([CLI, "cache", TEXT, "-o", out, "-m", path], check=True, capture_output=True)
                want = read_safetensors(out)[0]
            logits, cache = m.run_with_cache(TEXT)
            T, H = len(m.to_ids(TEXT)), m.cfg.n_heads
            self.assertTrue(np.array_equal(cache["hook_embed"], want["rows"]))
            self.assertTrue(np.array_equal(cache["blocks.0.attn.hook_q"], want["queries"]))
            self.assertTrue(np.array_equal(cache["blocks.0.attn.hook_k"], want["keys"]))
            self.assertTrue(np.array_equal(cache["blocks.0.attn.hook_v"], want["values"]))
            self.assertTrue(np.array_equal(cache["blocks.0.attn.hook_z"], want["head_outputs"]))
            self.assertTrue(np.array_equal(cache["hook_hidden"], want["hidden"]))
            self.assertTrue(np.array_equal(cache["hook_logits"], want["logits"]))
            self.assertTrue(np.array_equal(logits, want["logits"]))
            pattern = cache["blocks.0.attn.hook_pattern"]
            self.assertEqual(pattern.shape, (H, T, T))
            for t in range(T):
                for u in range(t + 1):
                    self.assertEqual(pattern[:, t, u].tolist(), want["attention"][:, t, t - u].tolist())
            self.assertEqual(np.triu(pattern, 1).any(), False, "weights above the diagonal")
            self.assertTrue(np.allclose(pattern.sum(-1), 1, atol=1e-5))

    def test_every_hook_name_has_its_documented_shape(self):
        for path in model_paths():
            m = model(path)
            _, cache = m.run_with_cache("Lily found a ball.")
            self.assertEqual(sorted(cache), sorted(m.hook_names))
            T, H, c = 6, m.cfg.n_heads, m.cfg
            Z = c.row_dim + c.n_layers * H * c.value_dim if c.arch == "attention" else c.context * c.row_dim
            shapes = {"hook_hidden_in": (T, Z), "hook_hidden": (T, c.hidden_dim), "hook_logits": (T, c.vocab_size)}
            if c.arch == "attention":
                shapes["hook_embed"] = (T, c.row_dim)
            for l in range(c.n_layers if c.arch == "attention" else 0):
                b = "blocks.%d.attn." % l
                shapes.update({b + "hook_q": (T, H, c.key_dim), b + "hook_k": (T, H, c.key_dim),
                               b + "hook_v": (T, H, c.value_dim), b + "hook_z": (T, H, c.value_dim),
                               b + "hook_pattern": (H, T, T), b + "hook_distance_score": (H, T, T),
                               b + "hook_attn_scores": (H, T, T)})
            self.assertEqual({k: v.shape for k, v in cache.items()}, shapes, path)

    def test_distance_scores_are_the_models(self):
        m = model(model_paths()[0])
        _, cache = m.run_with_cache(TEXT, names_filter="blocks.0.attn.hook_distance_score")
        distance = read_safetensors(m.path)[0]["distance"]  # [H, 256]
        d = cache["blocks.0.attn.hook_distance_score"]
        self.assertEqual(list(cache), ["blocks.0.attn.hook_distance_score"])
        for t in range(d.shape[1]):
            for u in range(t + 1):
                self.assertTrue(np.array_equal(d[:, t, u], distance[:, t - u]))

    def test_names_filter_as_a_function(self):
        m = model(model_paths()[1])
        _, cache = m.run_with_cache("Lily found a ball.", names_filter=lambda n: n.endswith("hook_z"))
        self.assertEqual(sorted(cache), ["blocks.0.attn.hook_z", "blocks.1.attn.hook_z"])


class Hooks(unittest.TestCase):
    def test_hooks_that_change_nothing_give_the_same_bits(self):
        for path in model_paths():
            m = model(path)
            plain, loss = m(TEXT), m.loss(TEXT)
            seen = []

            def touch(x, hook):
                seen.append(hook.name)
                return x.copy() if len(seen) % 2 else None

            hooks = [(n, touch) for n in m.hook_names if "distance_score" not in n]
            self.assertTrue(np.array_equal(m.run_with_hooks(TEXT, fwd_hooks=hooks), plain), path)
            self.assertEqual(m.loss(TEXT, fwd_hooks=hooks), loss, path)
            self.assertEqual(seen[:len(hooks)], [n for n, _ in hooks], "hooks run in the pass's order")

    def test_zeroing_head_3_of_hook_z_is_ablate_3(self):
        for path in model_paths():
            m = model(path)
            if m.cfg.arch != "attention":
                continue
            layer = m.cfg.n_layers - 1
            name = "3" if layer == 0 else "%d:3" % (layer + 1)

            def zero(z, hook):
                z[:, 3, :] = 0

            hooked = m.loss(TEXT, fwd_hooks=[("blocks.%d.attn.hook_z" % layer, zero)])
            want = cli("eval", "--text", TEXT, "--ablate", name, "--json", "-m", path)["loss"]
            same_number(self, hooked, want, path)

    def test_patching_by_hook_gives_patchs_numbers(self):
        m = model(model_paths()[0])
        clean, corrupt = "Lily and Tom went to the park. Lily gave the ball to", \
                         "Lily and Tom went to the park. Tom gave the ball to"
        want = cli("patch", clean, corrupt, "--json", "-m", m.path)
        a, w = want["answer_id"], want["wrong_id"]
        _, cache = m.run_with_cache(clean)
        ld = lambda logits: float(logits[-1, a]) - float(logits[-1, w])  # noqa: E731
        ld_clean, ld_corrupt = ld(m(clean)), ld(m(corrupt))
        same_number(self, ld_clean, want["clean_diff_model"], "clean LD")
        same_number(self, ld_corrupt, want["corrupt_diff_model"], "corrupt LD")
        norm = lambda x: (x - ld_corrupt) / (ld_clean - ld_corrupt)  # noqa: E731
        # patch evaluates the last position in double, the pass in float; how far apart they land depends
        # on the BLAS kernel the CPU gets (2e-6 was exceeded by 3% on a Zen 4 core), so 5e-6 of the logits
        tol = 5e-6 * max(abs(ld_clean), 1) / abs(ld_clean - ld_corrupt)
        for h, row in enumerate(want["heads"]):
            def put(z, hook, h=h):
                z[-1, h] = cache["blocks.0.attn.hook_z"][-1, h]
            self.assertAlmostEqual(norm(ld(m.run_with_hooks(corrupt, [("blocks.0.attn.hook_z", put)]))),
                                   row["output"], delta=tol, msg="head %d output" % h)
        for u, row in enumerate(want["positions"]):
            def put_row(r, hook, u=u):
                r[u] = cache["hook_embed"][u]
            self.assertAlmostEqual(norm(ld(m.run_with_hooks(corrupt, [("hook_embed", put_row)]))), row["row"],
                                   delta=tol, msg="row %d" % u)

    def test_a_changed_pattern_is_read_by_the_rest_of_the_pass(self):
        m = model(model_paths()[0])
        _, cache = m.run_with_cache(TEXT)
        T = cache["hook_embed"].shape[0]
        even = np.tril(np.ones((T, T), np.float32)) / np.arange(1, T + 1, dtype=np.float32)[:, None]

        def flatten(p, hook):
            p[2] = even

        _, patched = m.run_with_cache(TEXT, fwd_hooks=[("blocks.0.attn.hook_pattern", flatten)])
        v = cache["blocks.0.attn.hook_v"][:, 2, :].astype(np.float64)
        self.assertTrue(np.allclose(patched["blocks.0.attn.hook_z"][:, 2], even.astype(np.float64) @ v, atol=1e-5))
        self.assertTrue(np.array_equal(patched["blocks.0.attn.hook_pattern"][2], even))
        self.assertTrue(np.array_equal(patched["blocks.0.attn.hook_z"][:, 3], cache["blocks.0.attn.hook_z"][:, 3]))

    def test_a_name_filter_hooks_every_name_it_takes(self):
        m = model(model_paths()[1])
        seen = []
        m.run_with_hooks(TEXT, [(lambda n: n.endswith("hook_z"), lambda z, hook: seen.append(hook.layer()))])
        self.assertEqual(seen, [0, 1])

    def test_a_changed_layer_reaches_the_layers_above(self):
        m = model(model_paths()[1])
        _, cache = m.run_with_cache(TEXT)

        def zero(z, hook):
            return np.zeros_like(z)

        _, hooked = m.run_with_cache(TEXT, fwd_hooks=[("blocks.0.attn.hook_z", zero)])
        self.assertFalse(np.array_equal(hooked["blocks.1.attn.hook_q"], cache["blocks.1.attn.hook_q"]))
        self.assertTrue(np.array_equal(hooked["hook_embed"], cache["hook_embed"]))

    def test_changed_logits_give_the_loss_again(self):
        m = model(model_paths()[0])
        ids = m.to_ids(TEXT)

        def certain(x, hook):
            x[:] = -30
            x[np.arange(len(ids) - 1), ids[1:]] = 30

        self.assertLess(m.loss(TEXT, fwd_hooks=[("hook_logits", certain)]), 1e-20)

    def test_huge_logits_give_the_loss_of_equal_tokens(self):
        m = model(model_paths()[0])

        def flat(x, hook):  # every token as likely: log(V), not the 0 of 3e38 + log(V) in float
            x[:] = 3e38

        self.assertAlmostEqual(m.loss(TEXT, fwd_hooks=[("hook_logits", flat)]), math.log(m.cfg.vocab_size), places=5)

    def test_a_hook_that_raises_raises_its_exception(self):
        m = model(model_paths()[0])

        class Boom(Exception):
            pass

        def boom(x, hook):
            raise Boom("from " + hook.name)

        for name in m.hook_names:
            with self.assertRaises(Boom) as cm:
                m.run_with_hooks(TEXT, [(name, boom)])
            self.assertEqual(str(cm.exception), "from " + name)
        self.assertEqual(m.loss(TEXT), model(m.path).loss(TEXT), "the model works on")

    def test_bad_hooks_raise_clean_errors(self):
        m = model(model_paths()[0])
        with self.assertRaises(ValueError):
            m.run_with_hooks(TEXT, [("hook_hidden", lambda x, h: x[:2])])
        with self.assertRaises(storylm.StorylmError) as cm:
            m.run_with_hooks(TEXT, [("blocks.0.attn.hook_distance_score", lambda x, h: x + 1)])
        self.assertIn("read-only", cm.exception.message)
        with self.assertRaises(storylm.StorylmError) as cm:
            m.run_with_hooks(TEXT, [("blocks.0.attn.hook_result", lambda x, h: None)])
        self.assertIn("hook_result", cm.exception.message)
        self.assertIn("blocks.0.attn.hook_z", cm.exception.hint)
        w8 = model(os.path.join(MODELS, "tinystories-window8.safetensors"))
        with self.assertRaises(storylm.StorylmError):
            w8.run_with_hooks(TEXT, [("blocks.0.attn.hook_z", lambda x, h: None)])


class Threads(unittest.TestCase):
    def test_passes_in_python_threads_give_the_same_numbers(self):
        m = model(model_paths()[0])
        want = m.loss(TEXT)
        got, errors = [], []

        def work():
            try:
                for _ in range(3):
                    got.append(m.loss(TEXT, fwd_hooks=[("blocks.0.attn.hook_z", lambda z, h: None)]))
            except BaseException as exc:  # noqa: BLE001 - reported below
                errors.append(exc)

        threads = [threading.Thread(target=work) for _ in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        self.assertEqual(errors, [])
        self.assertEqual(got, [want] * 12)
        self.assertEqual(threading.active_count(), 1)


class Handles(unittest.TestCase):
    """A model closed while a call on it runs, or copied, is never freed under
    a call nor twice (under the sanitizers, a use-after-free or double free
    would be their report; without them, a crash)."""

    def fresh(self):
        return storylm.load(model_paths()[0])

    def test_a_hook_that_closes_the_model_lets_the_pass_finish(self):
        m, want = self.fresh(), model(model_paths()[0])(TEXT)

        def close(x, hook):
            m.close()

        self.assertTrue(np.array_equal(m(TEXT, fwd_hooks=[("hook_embed", close)]), want))
        with self.assertRaises(storylm.StorylmError) as cm:
            m.loss(TEXT)
        self.assertIn("closed", cm.exception.message)

    def test_a_hook_that_closes_and_calls_again_raises(self):
        m = self.fresh()

        def close_and_call(x, hook):
            m.close()
            m.tokenize("Lily")

        with self.assertRaises(storylm.StorylmError) as cm:
            m(TEXT, fwd_hooks=[("hook_hidden", close_and_call)])
        self.assertIn("closed", cm.exception.message)

    def test_close_from_another_thread_during_a_pass(self):
        m, want = self.fresh(), model(model_paths()[0])(TEXT)
        in_pass, closed, got = threading.Event(), threading.Event(), []

        def wait(x, hook):  # the pass stops here until the model is closed
            in_pass.set()
            closed.wait(30)

        t = threading.Thread(target=lambda: got.append(m(TEXT, fwd_hooks=[("blocks.0.attn.hook_q", wait)])))
        t.start()
        self.assertTrue(in_pass.wait(30))
        m.close()
        closed.set()
        t.join()
        self.assertTrue(np.array_equal(got[0], want))
        with self.assertRaises(storylm.StorylmError):
            m(TEXT)

    def test_close_from_another_thread_during_generate(self):
        m = self.fresh()
        want = model(model_paths()[0]).generate("Tom", max_tokens=300, samples=4, seed=2)
        got = []

        def work():
            try:
                got.append(m.generate("Tom", max_tokens=300, samples=4, seed=2))
            except storylm.StorylmError as err:  # closed before it began
                got.append(err.message)

        t = threading.Thread(target=work)
        t.start()
        time.sleep(0.05)
        m.close()
        t.join()
        self.assertIn(got[0], [want, "the model was closed"])

    def test_copies_share_the_model_and_close_on_their_own(self):
        m = self.fresh()
        want, ids = m.loss(TEXT), m.tokenize(TEXT).tolist()
        shallow, deep = copy.copy(m), copy.deepcopy(m)
        del m
        gc.collect()
        self.assertEqual(shallow.loss(TEXT), want)
        self.assertEqual(shallow.tokenizer.encode(TEXT).tolist(), ids)
        shallow.close()
        with self.assertRaises(storylm.StorylmError):
            shallow.loss(TEXT)
        self.assertEqual(deep.loss(TEXT), want)
        self.assertEqual(deep.tokenizer.encode(TEXT).tolist(), ids)
        deep.cfg["arch"] = "changed"
        self.assertEqual(model(model_paths()[0]).cfg["arch"], "attention", "a deep copy's cfg is its own")
        deep.close()
        deep.close()
        with self.assertRaises(storylm.StorylmError):
            copy.copy(deep)


class Refusals(unittest.TestCase):
    """What ctypes would pass on wrong (a text cut at a NUL, an int wrapped to
    32 bits) is refused, named in Python's words; paths come as str, bytes or
    os.PathLike."""

    def test_a_nul_in_a_text_is_refused_not_cut(self):
        m = model(model_paths()[0])
        text = "Lily\0 found a ball."
        for call in [m.tokenize, m.loss, m, m.run_with_cache, m.to_ids, lambda t: m.generate(t, max_tokens=3, seed=1)]:
            with self.assertRaises(storylm.StorylmError) as cm:
                call(text)
            self.assertIn("NUL byte at byte offset 4", cm.exception.message)
        with self.assertRaises(ValueError) as cm:
            m.generate("Tom", max_tokens=3, precision="fp32\0bf16")
        self.assertIn("precision=", str(cm.exception))
        for path in ["%s\0.txt" % model_paths()[0], b"a\0b"]:
            with self.assertRaises(ValueError):
                storylm.load(path)
        with self.assertRaises(ValueError):
            m.generate("Tom", max_tokens=3, stories="stories.txt\0x")

    def test_whole_numbers_out_of_the_clis_range_raise_naming_the_keyword(self):
        # one table, one range: the CLI's (never a C type's, which ctypes would wrap)
        m = model(model_paths()[0])
        for kw, says in [(dict(max_tokens=2**32 + 3), "max_tokens=4294967299 is out of range (0 to 1000000)"),
                         (dict(top_k=2**32), "top_k=4294967296 is out of range (0 to 1000000)"),
                         (dict(samples=2**32 + 1), "samples=4294967297 is out of range (1 to 4096)"),
                         (dict(seed=2**64), "seed=18446744073709551616 is out of range (-1 to 2147483647)"),
                         (dict(seed=-2), "seed=-2 is out of range"),
                         (dict(max_tokens=-2**31 - 1), "max_tokens=-2147483649 is out of range")]:
            with self.assertRaises(storylm.KeywordError) as cm:
                m.generate("Tom", **kw)
            self.assertIn("generate: " + says, str(cm.exception))
            self.assertIsInstance(cm.exception, ValueError)
        # the CLI refuses the same values with the same range, in its own words
        for flag, kw, value in [("--tokens", "max_tokens", 1000001), ("--samples", "samples", 4097),
                                ("--seed", "seed", 2**31)]:
            with self.assertRaises(storylm.KeywordError) as cm:
                m.generate("Tom", **{kw: value})
            got = subprocess.run([CLI, "generate", "Tom", flag, str(value)], capture_output=True, text=True)
            self.assertEqual(got.returncode, 2)
            rng = str(cm.exception).split(" is out of range ")[1]
            self.assertIn("%s %d is out of range %s" % (flag, value, rng), got.stderr)
        with self.assertRaises(TypeError) as cm:
            m.generate("Tom", max_tokens=2.5)
        self.assertIn("max_tokens=2.5", str(cm.exception))
        self.assertEqual(m.generate("Tom", max_tokens=np.int64(3), seed=np.uint64(4)), m.generate("Tom", max_tokens=3,
                                                                                                   seed=4))

    def test_seed_minus_1_draws_a_seed_as_the_clis(self):
        m = model(model_paths()[0])
        text = m.generate("Tom", max_tokens=8, seed=-1)
        self.assertTrue(0 <= m.last_seed < 2**31, m.last_seed)
        self.assertEqual(m.generate("Tom", max_tokens=8, seed=m.last_seed), text)

    def test_ids_are_checked_before_they_are_cast(self):
        m = model(model_paths()[0])
        for ids, says in [([2**32 + 5], "4294967301"), ([1, 2**64 + 5], "18446744073709551621"), ([-1], "-1"),
                          (np.array([2**40], np.int64), "1099511627776")]:
            for call in (m.decode, m, m.to_str_tokens):
                with self.assertRaises(storylm.StorylmError) as cm:
                    call(ids)
                self.assertIn("token id %s is out of range" % says, cm.exception.message)
        self.assertEqual(m.decode([]), "")

    def test_paths_as_str_bytes_and_pathlike(self):
        path = model_paths()[0]
        want = model(path).loss(TEXT)
        for given in [os.fsencode(path), pathlib.Path(path)]:
            m = storylm.load(given)
            self.assertEqual((m.path, m.loss(TEXT)), (path, want))
            self.assertEqual(storylm.Model(given).path, path)
        with tempfile.TemporaryDirectory() as d:
            odd = os.path.join(os.fsencode(d), b"model-\xff.safetensors")  # not UTF-8: kept as os.fsdecode keeps it
            os.symlink(path, odd)
            self.assertEqual(storylm.load(odd).path, os.fsdecode(odd))
            with self.assertRaises(storylm.StorylmError) as cm:
                storylm.load(os.path.join(os.fsencode(d), b"none.safetensors"))
            self.assertIn("none.safetensors", cm.exception.message)
        with self.assertRaises(TypeError):
            storylm.load(3)
        self.assertEqual(model(path).generate("Tom", max_tokens=5, seed=1, stories=pathlib.Path(SOURCE, "data",
                                                                                                   "stories.txt")),
                         model(path).generate("Tom", max_tokens=5, seed=1, stories=os.path.join(SOURCE, "data",
                                                                                                "stories.txt")))


class Ablate(unittest.TestCase):
    """ablate= names heads as the CLI's --ablate does, and switches off what it switches off."""

    def test_ablated_loss_and_text_are_the_clis(self):
        for path, heads in [(os.path.join(MODELS, "tinystories.safetensors"), "1,3"),
                            (os.path.join(MODELS, "tinystories-layers2.safetensors"), "1:3,2:5")]:
            m = model(path)
            want = cli("eval", "--text", TEXT, "--json", "-m", path, "--ablate", heads)["loss"]
            same_number(self, m.loss(TEXT, ablate=heads), want, path)
            self.assertNotEqual(m.loss(TEXT, ablate=heads), m.loss(TEXT))
            listed = [int(h) if ":" not in h else h for h in heads.split(",")]
            self.assertEqual(m.loss(TEXT, ablate=listed), m.loss(TEXT, ablate=heads))
            text = cli("generate", "Lily found a", "--json", "-m", path, "-n", "20", "--seed", "4", "--ablate",
                       heads)["samples"][0]["text"]
            self.assertEqual(m.generate("Lily found a", max_tokens=20, seed=4, ablate=heads), text, path)

    def test_zeroing_hook_z_is_ablate(self):
        m = model(os.path.join(MODELS, "tinystories-layers2.safetensors"))

        def zero(z, hook):
            z[:, 5] = 0

        hooked = m.run_with_hooks(TEXT, [("blocks.1.attn.hook_z", zero)])
        self.assertTrue(np.array_equal(m(TEXT, ablate="2:5"), hooked))

    def test_heads_the_model_lacks_are_refused_with_its_range(self):
        m = model(os.path.join(MODELS, "tinystories-layers2.safetensors"))
        for ablate, says in [("2:8", "ablate='2:8': head 8 is out of range: this model has layers 1 to 2 of heads 0 to 7"),
                             ([3, "3:0"], "ablate=[3, '3:0']: layer 3 is out of range"),
                             ("x", "ablate='x' is not a list of heads")]:
            with self.assertRaises(storylm.StorylmError) as cm:
                m.loss(TEXT, ablate=ablate)
            self.assertIn(says, cm.exception.message)
            self.assertNotIn("--", cm.exception.hint)
        for ablate in [True, 1.5, [], [None]]:
            with self.assertRaises(storylm.StorylmError):
                m.generate("Tom", max_tokens=3, ablate=ablate)
        # generate reads ablate= with its table (the CLI's --ablate), the heads as the library reads them
        self.assertEqual(storylm.generate_params()["ablate"]["type"], "heads")
        with self.assertRaises(storylm.KeywordError) as cm:
            m.generate("Tom", max_tokens=3, ablate=[3, "2:8"])
        self.assertIn("generate: ablate=[3, '2:8']: head 8 is out of range: this model has layers 1 to 2",
                      cm.exception.message)


class Generate(unittest.TestCase):
    def test_greedy_and_sampled_text_is_the_clis(self):
        for path in model_paths():
            m = model(path)
            for opts in [dict(temperature=0), dict(temperature=0.9, top_k=40, top_p=0.9, seed=7)]:
                args = ["generate", "Lily found a", "--json", "-m", path, "-n", "30", "-t", str(opts["temperature"]),
                        "--seed", str(opts.get("seed", 1))]
                if "top_k" in opts:
                    args += ["-k", str(opts["top_k"]), "-p", str(opts["top_p"])]
                want = cli(*args)["samples"][0]["text"]
                got = m.generate("Lily found a", max_tokens=30, **{"seed": 1, **opts})
                self.assertEqual(got, want, "%s %s" % (path, opts))

    def test_samples(self):
        m = model(model_paths()[0])
        want = [s["text"] for s in cli("generate", "Tom", "--json", "-m", m.path, "-n", "12", "--samples", "3",
                                        "--seed", "5")["samples"]]
        self.assertEqual(m.generate("Tom", max_tokens=12, samples=3, seed=5), want)

    def test_defaults_are_the_clis(self):
        d = storylm.generate_defaults()
        got = cli("generate", "Tom", "--json", "-n", "5", "-m", model_paths()[0])
        for key in ["temperature", "top_k", "top_p", "min_p", "repeat_penalty", "repeat_last_n"]:
            self.assertEqual(d[key], got[key], key)
        m = model(model_paths()[0])
        self.assertEqual(m.generate("Tom", max_tokens=5, seed=3), cli("generate", "Tom", "--json", "-n", "5", "-s", "3",
                                                                        "-m", m.path)["samples"][0]["text"])

    @unittest.skipUnless("avx512_bf16" in open("/proc/cpuinfo").read().split(), "this CPU has no avx512_bf16")
    def test_bf16_samples_are_the_clis(self):
        m = model(model_paths()[0])
        want = [s["text"] for s in cli("generate", "Tom", "--json", "-m", m.path, "-n", "20", "--samples", "2",
                                        "--seed", "5", "--precision", "bf16")["samples"]]
        self.assertEqual(m.generate("Tom", max_tokens=20, samples=2, seed=5, precision="bf16"), want)

    def test_bad_options_raise(self):
        m = model(model_paths()[0])
        # each named by its keyword and value, the hint in Python's words
        for kw, says in [(dict(top_p=0), "top_p=0"), (dict(top_k=-1), "top_k=-1"), (dict(samples=0), "samples=0"),
                         (dict(max_tokens=-5), "max_tokens=-5"), (dict(temperature=-1), "temperature=-1"),
                         (dict(temperature=200), "generate: temperature=200 is out of range (0 to 100)"),
                         (dict(precision="fp8"), "precision='fp8' is not fp32 or bf16"),
                         (dict(repeat_penalty=0), "repeat_penalty=0"), (dict(stop=""), "stop='' is empty")]:
            with self.assertRaises(storylm.StorylmError) as cm:
                m.generate("Tom", **kw)
            self.assertIn(says, cm.exception.message)
            self.assertNotIn("--", cm.exception.message + cm.exception.hint)
        # a keyword generate does not take is a TypeError naming the nearest; a value of the wrong type too
        with self.assertRaises(TypeError) as cm:
            m.generate("Tom", tempreature=0.5)
        self.assertIn("generate: no option tempreature=; did you mean temperature=?", str(cm.exception))
        with self.assertRaises(TypeError) as cm:
            m.generate("Tom", min_p="high")
        self.assertIn("min_p='high' is not a number", str(cm.exception))
        # the table's other options are keywords too, as the CLI's flags
        self.assertEqual(m.generate("Tom", max_tokens=20, seed=3, repeat_penalty=1.3, min_p=0.05, stop="."),
                         cli("generate", "Tom", "--json", "-n", "20", "-s", "3", "--repeat-penalty", "1.3", "--min-p",
                             "0.05", "--stop", ".", "-m", m.path)["samples"][0]["text"])
        self.assertEqual(storylm.generate_params()["max_tokens"]["max"], 1000000)


@unittest.skipUnless(SMALL_STORIES, "no stories to train on (tests/e2e_python.sh gives them)")
class Train(unittest.TestCase):
    def test_train_gives_the_clis_model(self):
        with tempfile.TemporaryDirectory() as d:
            opts = dict(vocab=os.path.join(MODELS, "vocab.txt"), eval_every=5, test_stories=20, threads=2, seed=3)
            lines = []
            summary = storylm.train(SMALL_STORIES, os.path.join(d, "py.safetensors"), steps=10, progress=lines.append,
                                    **opts)
            subprocess.run([CLI, "train", SMALL_STORIES, "-o", os.path.join(d, "cli.safetensors"), "--steps", "10",
                            "--vocab", opts["vocab"], "--eval-every", "5", "--test-stories", "20", "--threads", "2",
                            "--seed", "3"], check=True, capture_output=True)
            self.assertEqual([i["step"] for i in lines], [5, 10])  # each evaluation's numbers
            self.assertIn("step", json.dumps(summary))
            sums = [[t["fnv1a64"] for t in cli("info", "--json", "-m", os.path.join(d, f))["tensors"]]
                    for f in ("py.safetensors", "cli.safetensors")]
            self.assertEqual(sums[0], sums[1])
            self.assertEqual(storylm.load(os.path.join(d, "py.safetensors")).loss(TEXT),
                             storylm.load(os.path.join(d, "cli.safetensors")).loss(TEXT))

    def test_from_fine_tunes_as_the_cli(self):
        with tempfile.TemporaryDirectory() as d:
            opts = dict(eval_every=3, test_stories=20, threads=1, seed=3)
            summary = storylm.train(SMALL_STORIES, os.path.join(d, "py.safetensors"), steps=6, from_="tinystories",
                                    progress=lambda l: None, **opts)
            subprocess.run([CLI, "train", SMALL_STORIES, "-o", os.path.join(d, "cli.safetensors"), "--steps", "6",
                            "--from", "tinystories", "--eval-every", "3", "--test-stories", "20", "--threads", "1",
                            "--seed", "3"], check=True, capture_output=True)
            self.assertEqual(summary["from"]["file"], "tinystories.safetensors")
            sums = [[t["fnv1a64"] for t in cli("info", "--json", "-m", os.path.join(d, f))["tensors"]]
                    for f in ("py.safetensors", "cli.safetensors")]
            self.assertEqual(sums[0], sums[1])

    def test_cased_keeps_the_letters_from_the_model_alone(self):
        with tempfile.TemporaryDirectory() as d:
            stories = os.path.join(d, "fr.txt")
            with open(stories, "w", encoding="utf-8") as f:
                f.write("\n<|endoftext|>\n".join("Käthe rief: „Schau mal!“ Théo était très content. %d" % i
                                                   for i in range(30)))
            path = os.path.join(d, "cased.safetensors")
            storylm.train(stories, path, cased=True, steps=2, eval_every=0, threads=1, vocab=os.path.join(d, "v.txt"),
                          progress=lambda l: None)
            m = storylm.load(path)
            self.assertEqual(m.to_str_tokens("Käthe rief")[1:], ["Käthe", "rief"])
            self.assertEqual(m.decode(m.tokenize("Théo était très content.")), "Théo était très content.")

    def test_a_transformer_hooks_and_cache_are_transformerlens(self):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "tf.safetensors")
            subprocess.run([CLI, "train", SMALL_STORIES, "--arch", "transformer", "--layers", "2", "-o", path,
                            "--steps", "2", "--vocab", os.path.join(MODELS, "vocab.txt"), "--eval-every", "0",
                            "--test-stories", "20", "--threads", "1"], check=True, capture_output=True)
            t = storylm.load(path)
            self.assertEqual(t.cfg.n_layers, cli("info", "--json", "-m", path)["config"]["layers"])
            same_number(self, t.loss(TEXT), cli("eval", "--text", TEXT, "--json", "-m", path)["loss"], "loss")
            self.assertEqual(t.hook_names[:3], ["hook_embed", "hook_pos_embed", "blocks.0.hook_resid_pre"])
            self.assertEqual(t.hook_names[-2:], ["ln_final.hook_normalized", "hook_logits"])
            logits, cache = t.run_with_cache(TEXT)
            self.assertEqual(sorted(cache), sorted(t.hook_names))
            T = logits.shape[0]
            self.assertEqual(cache["blocks.1.attn.hook_pattern"].shape, (8, T, T))
            self.assertEqual(cache["blocks.0.attn.hook_z"].shape, (T, 8, 8))
            self.assertEqual(cache["blocks.1.mlp.hook_post"].shape, (T, 256))
            self.assertTrue(np.array_equal(cache["hook_logits"], logits))
            # the CLI's cache of the same text holds the same numbers under the same names
            out = os.path.join(d, "cache.safetensors")
            subprocess.run([CLI, "cache", TEXT, "-m", path, "-o", out], check=True, capture_output=True)
            tensors = read_safetensors(out)[0]
            for name in t.hook_names:
                self.assertTrue(np.array_equal(tensors[name], cache[name]), name)
            # a hook that switches head 1:3 off gives --ablate 1:3's loss
            def off(z, hook):
                z[:, 3, :] = 0
                return z
            ablated = t.run_with_hooks(TEXT, [("blocks.0.attn.hook_z", off)], return_type="loss")
            same_number(self, ablated, cli("eval", "--text", TEXT, "--json", "-m", path, "--ablate", "1:3")["loss"],
                        "loss with hook_z of head 1:3 set to 0")

    def test_a_stories_file_named_like_a_flag_is_a_file(self):
        with tempfile.TemporaryDirectory() as d:
            here = os.getcwd()
            os.chdir(d)
            try:
                with open(SMALL_STORIES, "rb") as src, open("-s.txt", "wb") as dst:
                    dst.write(src.read())
                opts = dict(progress=lambda l: None, vocab=os.path.join(MODELS, "vocab.txt"), eval_every=0,
                            test_stories=20, threads=1)
                storylm.train("-s.txt", "-s.safetensors", steps=2, seed=3, **opts)
                # resumed: "-s.safetensors" is not --seed given again (which a resume refuses)
                summary = storylm.train("-s.txt", "-s.safetensors", steps=3, resume=True, **opts)
                self.assertEqual(storylm.load("-s.safetensors").cfg.arch, "attention", summary)
                with self.assertRaises(storylm.StorylmError) as cm:
                    storylm.train("--help", "out.safetensors", steps=1, progress=lambda l: None)
                self.assertIn("'--help'", cm.exception.message)
            finally:
                os.chdir(here)

    def test_a_bad_option_is_named_by_its_keyword(self):
        out = os.path.join(tempfile.gettempdir(), "never.safetensors")
        for opts, says in [(dict(seed="x"), "seed='x' is not a whole number"),
                           (dict(seed=2**40), "seed=1099511627776 is out of range (0 to 2147483647)"),
                           (dict(lr=0), "lr=0 is out of range (1e-07 to 1)"),
                           (dict(stpes=3), "no option stpes=; did you mean steps=?"),
                           (dict(force="yes"), "force='yes': give force=True")]:
            with self.assertRaises(storylm.StorylmError) as cm:
                storylm.train(SMALL_STORIES, out, steps=1, progress=lambda l: None, **opts)
            self.assertIn(says, cm.exception.message)
            self.assertNotIn("--", cm.exception.message + cm.exception.hint.replace("storylm train --help", ""))
        for opts in [dict(help=True), dict(json=True), dict(o="x.safetensors")]:
            with self.assertRaises(TypeError):
                storylm.train(SMALL_STORIES, out, steps=1, progress=lambda l: None, **opts)

    def test_train_failure_raises_the_clis_message(self):
        with self.assertRaises(storylm.StorylmError) as cm:
            storylm.train("/nonexistent/stories.txt", "/tmp/never.safetensors", steps=1, progress=lambda l: None)
        self.assertIn("/nonexistent/stories.txt", cm.exception.message)


if __name__ == "__main__":
    unittest.main()
