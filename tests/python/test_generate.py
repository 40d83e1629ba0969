"""generate's every option against the real binary's generate --json, on the
chapter's network, the two-layer network, the transformer and attn-only, and generate
with hooks (run by tests/e2e_python.sh with test_storylm.py's environment)."""

import json
import os
import subprocess
import unittest

import numpy as np

import storylm
from test_storylm import CLI, MODELS

PATHS = [os.path.join(MODELS, n + ".safetensors")
         for n in ("tinystories", "tinystories-layers2", "tinystories-transformer", "tinystories-induction-attn-only")]
PROMPT = "Lily found a"
# What a run's JSON says of the machine or the command line, not of the stories.
NOT_COMPARED = {"command", "model", "seconds", "cpu_seconds", "tokens_per_second", "names_from"}


def cli_json(path, *flags):
    out = subprocess.run([CLI, "generate", PROMPT, "--json", "-m", path, *flags], check=True, capture_output=True,
                         text=True).stdout
    return json.loads(out)


def first_ablated_head(m):
    return "3" if m.cfg.n_layers == 1 else "1:3"


class Options(unittest.TestCase):
    """Each option alone, then together: the texts of generate --json."""

    CASES = [
        (dict(min_p=0.1), ["--min-p", "0.1"]),
        (dict(repeat_penalty=1.5), ["--repeat-penalty", "1.5"]),
        (dict(repeat_penalty=1.5, repeat_last_n=4), ["--repeat-penalty", "1.5", "--repeat-last-n", "4"]),
        (dict(stop="."), ["--stop", "."]),
        (dict(stop=["ball", "."]), ["--stop", "ball", "--stop", "."]),
        (dict(temperature=0), ["-t", "0"]),
        (dict(top_k=5, top_p=0.5), ["-k", "5", "-p", "0.5"]),
        (dict(samples=3), ["--samples", "3"]),
        (dict(temperature=1.2, min_p=0.05, repeat_penalty=1.2, repeat_last_n=16, stop="!"),
         ["-t", "1.2", "--min-p", "0.05", "--repeat-penalty", "1.2", "--repeat-last-n", "16", "--stop", "!"]),
    ]

    def test_each_option_is_the_clis(self):
        for path in PATHS:
            m = storylm.load(path)
            for kw, flags in self.CASES:
                want = [s["text"] for s in cli_json(path, "-n", "40", "-s", "11", *flags)["samples"]]
                got = m.generate(PROMPT, max_tokens=40, seed=11, **kw)
                self.assertEqual(got if isinstance(got, list) else [got], want, "%s %s" % (path, kw))

    def test_transformerlens_max_new_tokens(self):
        m = storylm.load(PATHS[2])
        self.assertEqual(m.generate(PROMPT, max_new_tokens=12, seed=4), m.generate(PROMPT, max_tokens=12, seed=4))
        with self.assertRaises(TypeError) as cm:
            m.generate(PROMPT, max_tokens=3, max_new_tokens=3)
        self.assertIn("give one", str(cm.exception))

    def test_ablate_is_the_clis(self):
        for path in PATHS:
            m = storylm.load(path)
            head = first_ablated_head(m)
            want = cli_json(path, "-n", "40", "-s", "2", "--ablate", head)["samples"][0]["text"]
            self.assertEqual(m.generate(PROMPT, max_tokens=40, seed=2, ablate=head), want, path)

    @unittest.skipUnless("avx512_bf16" in open("/proc/cpuinfo").read().split(), "this CPU has no avx512_bf16")
    def test_precision_is_the_clis(self):
        for path in PATHS:
            m = storylm.load(path)
            want = cli_json(path, "-n", "40", "-s", "2", "--precision", "bf16")["samples"][0]["text"]
            self.assertEqual(m.generate(PROMPT, max_tokens=40, seed=2, precision="bf16"), want, path)


class LogProbs(unittest.TestCase):
    def assertSameRun(self, got, want, what):
        got = {k: v for k, v in got.items() if k not in NOT_COMPARED}
        want = {k: v for k, v in want.items() if k not in NOT_COMPARED}
        self.assertEqual(json.dumps(got, sort_keys=True), json.dumps(want, sort_keys=True), what)

    def test_n_probs_and_logprobs_are_the_clis_json(self):
        for path in PATHS:
            m = storylm.load(path)
            for kw, flags in [(dict(n_probs=3), ["--n-probs", "3"]), (dict(logprobs=True), []),
                              (dict(n_probs=2, samples=2, stop="."), ["--n-probs", "2", "--samples", "2", "--stop",
                                                                      "."])]:
                want = cli_json(path, "-n", "15", "-s", "9", *flags)
                got = m.generate(PROMPT, max_tokens=15, seed=9, **kw)
                self.assertSameRun(got, want, "%s %s" % (path, kw))
                self.assertEqual(len(got["samples"][0]["tokens"][0].get("top_logprobs", [])), kw.get("n_probs", 0))

    def test_bad_n_probs(self):
        m = storylm.load(PATHS[0])
        with self.assertRaises(storylm.StorylmError) as cm:
            m.generate(PROMPT, max_tokens=3, n_probs=21)
        self.assertIn("n_probs=21 is out of range (0 to 20)", cm.exception.message)
        for bad in (-1, 2**40):
            with self.assertRaises(storylm.KeywordError):
                m.generate(PROMPT, max_tokens=3, n_probs=bad)
        with self.assertRaises(TypeError):
            m.generate(PROMPT, max_tokens=3, n_probs=1.5)


class Hooks(unittest.TestCase):
    def test_hooks_that_change_nothing_write_the_clis_text(self):
        for path in PATHS:
            m = storylm.load(path)
            seen = []

            def look(x, hook):
                seen.append(x.shape[0])

            want = cli_json(path, "-n", "30", "-s", "5", "--n-probs", "2")
            got = m.generate(PROMPT, max_tokens=30, seed=5, n_probs=2, fwd_hooks=[("hook_logits", look)])
            self.assertEqual(got["samples"][0]["text"], want["samples"][0]["text"], path)
            for a, b in zip(got["samples"][0]["tokens"], want["samples"][0]["tokens"]):
                self.assertEqual(a["id"], b["id"])
                self.assertAlmostEqual(a["logprob"], b["logprob"], delta=1e-5)  # a whole pass, not one position
            prompt_T = len(m.to_ids(PROMPT))
            self.assertEqual(seen[:3], [prompt_T, prompt_T + 1, prompt_T + 2])  # the story so far, each step

    def test_a_zeroed_head_writes_ablates_text(self):
        for path in PATHS:
            m = storylm.load(path)
            head = first_ablated_head(m)

            def zero(z, hook):
                z[:, 3, :] = 0

            want = [s["text"] for s in cli_json(path, "-n", "30", "-s", "6", "--samples", "2", "--ablate",
                                                head)["samples"]]
            got = m.generate(PROMPT, max_tokens=30, seed=6, samples=2, fwd_hooks=[("blocks.0.attn.hook_z", zero)])
            self.assertEqual(got, want, path)

    def test_a_hook_that_raises_stops_generate(self):
        m = storylm.load(PATHS[0])

        def boom(x, hook):
            raise RuntimeError("stop here")

        with self.assertRaises(RuntimeError):
            m.generate(PROMPT, max_tokens=5, seed=1, fwd_hooks=[("hook_hidden", boom)])
        with self.assertRaises(storylm.StorylmError):
            m.generate(PROMPT, max_tokens=5, seed=1, fwd_hooks=[("hook_nothing", boom)])


if __name__ == "__main__":
    unittest.main()
