"""storylm.train in process (run by tests/e2e_python.sh with
test_storylm.py's environment): the CLI's model bits for a seed on every
architecture and precision, no storylm program needed, progress as numbers,
a KeyboardInterrupt that saves a model resume=True finishes to the
uninterrupted run's bits, and refusals in Python's words, raised once."""

import contextlib
import io
import json
import os
import signal
import subprocess
import sys
import tempfile
import unittest

import storylm
from storylm.train import pythons_words
from test_storylm import CLI, MODELS, SMALL_STORIES

HAS_BF16 = "avx512_bf16" in open("/proc/cpuinfo").read() if os.path.exists("/proc/cpuinfo") else False


def info(path):
    """storylm info --json of a model file (asked each time, not cached)."""
    return json.loads(subprocess.run([CLI, "info", "--json", "-m", path], check=True, capture_output=True,
                                     text=True).stdout)


def step_of(path):
    return int(info(path)["metadata"]["step"])


def sums(path):
    """Each tensor's checksum: two models with the same are the same bits."""
    return [(t["name"], t["fnv1a64"]) for t in info(path)["tensors"]]


def cli_train(stories, out, **options):
    """The CLI's run with options as flags (keyword=True: the flag alone)."""
    args = [CLI, "train", stories, "-o", out]
    for k, v in options.items():
        args += ["--" + k.replace("_", "-")] + ([] if v is True else [str(v)])
    subprocess.run(args, check=True, capture_output=True)


class Refusal(unittest.TestCase):
    def test_a_refusal_is_raised_once_in_pythons_words(self):
        with tempfile.TemporaryDirectory() as d:
            greek = os.path.join(d, "greek.txt")
            with open(greek, "w", encoding="utf-8") as f:  # words the shipped vocabulary cannot spell
                f.write("\n\n".join(" ".join(["αβγ", "δεζ", "ηθι"] * 10) for _ in range(60)) + "\n")
            err = io.StringIO()
            with self.assertRaises(storylm.StorylmError) as cm, contextlib.redirect_stderr(err):
                storylm.train(greek, os.path.join(d, "m.safetensors"), steps=1, vocab=os.path.join(MODELS, "vocab.txt"))
        self.assertIn("[UNK]", cm.exception.message)
        self.assertIn("allow_unknown=True", cm.exception.hint)
        self.assertIn("storylm.train(%r, OUT, vocab=" % greek, cm.exception.hint)
        self.assertNotIn("--", cm.exception.hint)
        self.assertNotIn("[UNK]", err.getvalue(), "the error was printed as well as raised")
        self.assertNotIn("HINT", err.getvalue())

    def test_a_missing_file_is_raised_once(self):
        err = io.StringIO()
        with self.assertRaises(storylm.StorylmError) as cm, contextlib.redirect_stderr(err):
            storylm.train("/nonexistent/stories.txt", "/tmp/never.safetensors", steps=1)
        self.assertIn("/nonexistent/stories.txt", cm.exception.message)
        self.assertNotIn("error", err.getvalue())  # what it said before it failed, not the error again
        self.assertNotIn("HINT", err.getvalue())
        self.assertEqual(type(cm.exception).__name__, "StorylmError")

    def test_flags_and_commands_in_pythons_words(self):
        self.assertEqual(pythons_words("storylm train 's.txt' --vocab v.txt --keep-best (then)"),
                         "storylm.train('s.txt', OUT, vocab='v.txt', keep_best=True) (then)")
        self.assertEqual(pythons_words("give --steps 200 or --lr=0.01; --allow-unknown trains anyway"),
                         "give steps=200 or lr=0.01; allow_unknown=True trains anyway")
        self.assertEqual(pythons_words("cannot open '--help' for reading"), "cannot open '--help' for reading")
        self.assertEqual(pythons_words("cannot resume 'm' with --seed 3: the run was trained with seed 2"),
                         "cannot resume 'm' with seed=3: the run was trained with seed 2")
        self.assertEqual(pythons_words("a resumed run keeps its settings; only --steps may change"),
                         "a resumed run keeps its settings; only steps= may change")
        self.assertEqual(pythons_words("give --vocab models/vocab.txt or --keep-best then"),
                         "give vocab='models/vocab.txt' or keep_best=True then")


@unittest.skipUnless(SMALL_STORIES, "no stories to train on (tests/e2e_python.sh gives them)")
class SameBits(unittest.TestCase):
    """The model of storylm.train equals the CLI's, tensor for tensor, for the same seed and options."""

    def same_as_the_cli(self, **options):
        opts = dict(vocab=os.path.join(MODELS, "vocab.txt"), eval_every=3, test_stories=20, threads=2, seed=5,
                    **options)
        with tempfile.TemporaryDirectory() as d:
            py, cli = os.path.join(d, "py.safetensors"), os.path.join(d, "cli.safetensors")
            summary = storylm.train(SMALL_STORIES, py, steps=6, progress=False, **opts)
            cli_train(SMALL_STORIES, cli, steps=6, **opts)
            self.assertEqual(sums(py), sums(cli), options)
            self.assertEqual(summary["step"], 6)
            self.assertEqual(summary["model"]["file"], py)

    def test_fp32(self):
        self.same_as_the_cli()

    @unittest.skipUnless(HAS_BF16, "no avx512_bf16 on this CPU")
    def test_bf16(self):
        self.same_as_the_cli(precision="bf16")

    def test_two_layers(self):
        self.same_as_the_cli(layers=2)

    def test_transformer(self):
        self.same_as_the_cli(arch="transformer", layers=2)


@unittest.skipUnless(SMALL_STORIES, "no stories to train on (tests/e2e_python.sh gives them)")
class InProcess(unittest.TestCase):
    def test_no_storylm_program_is_needed(self):
        """Trained with PATH stripped and every way to find or start the program taken away."""
        with tempfile.TemporaryDirectory() as d:
            out = os.path.join(d, "m.safetensors")
            code = """
import subprocess, sys, storylm, storylm.train as t
def refuse(*a, **k):
    raise AssertionError("train started a program")
subprocess.Popen = subprocess.run = refuse
t.program = refuse
s = storylm.train(sys.argv[1], sys.argv[2], steps=2, vocab=sys.argv[3], eval_every=0, test_stories=5, threads=1,
                  progress=False)
print(s["step"])
"""
            env = dict(os.environ, PATH="", STORYLM_PROGRAM="/nonexistent/storylm")
            done = subprocess.run([sys.executable, "-c", code, SMALL_STORIES, out, os.path.join(MODELS, "vocab.txt")],
                                  env=env, capture_output=True, text=True)
            self.assertEqual(done.returncode, 0, done.stderr)
            self.assertEqual(done.stdout.strip(), "2")
            self.assertEqual(step_of(out), 2)

    def test_progress_gets_each_evaluations_numbers(self):
        with tempfile.TemporaryDirectory() as d:
            infos = []
            summary = storylm.train(SMALL_STORIES, os.path.join(d, "m.safetensors"), steps=6, progress=infos.append,
                                    vocab=os.path.join(MODELS, "vocab.txt"), eval_every=2, test_stories=20, threads=1)
        self.assertEqual([i["step"] for i in infos], [2, 4, 6])
        for i in infos:
            for key in ("loss", "test_loss", "test_accuracy", "test_loss_per_char", "tokens_per_s", "lr", "elapsed_s",
                        "eta_s"):
                self.assertIsInstance(i[key], float, key)
            self.assertEqual(i["steps"], 6)
        self.assertAlmostEqual(infos[-1]["test_loss"], summary["test_loss"], places=12)

    def test_default_progress_is_a_line_on_stderr(self):
        with tempfile.TemporaryDirectory() as d:
            err = io.StringIO()
            with contextlib.redirect_stderr(err):
                storylm.train(SMALL_STORIES, os.path.join(d, "m.safetensors"), steps=4, eval_every=2, threads=1,
                              vocab=os.path.join(MODELS, "vocab.txt"), test_stories=20)
        try:
            import tqdm  # noqa: F401  its bar, "train: 100%|...| 4/4 [..., loss=..., test=...]"
            self.assertRegex(err.getvalue(), r"4/4.*test=[0-9.]+")
        except ImportError:
            self.assertRegex(err.getvalue(), r"step +4/4 \| loss [0-9.]+ \| test [0-9.]+")

    def test_keyboard_interrupt_saves_and_resume_gives_the_same_bits(self):
        """A KeyboardInterrupt (here raised by progress after the first evaluation, as a notebook's
        interrupt comes) stops the run after a save; the model loads, and resume=True finishes it to
        the bits of a run never interrupted."""
        opts = dict(vocab=os.path.join(MODELS, "vocab.txt"), eval_every=2, test_stories=20, threads=1, seed=4,
                    patience=0)
        with tempfile.TemporaryDirectory() as d:
            whole, cut = os.path.join(d, "whole.safetensors"), os.path.join(d, "cut.safetensors")
            storylm.train(SMALL_STORIES, whole, steps=8, progress=False, **opts)

            def interrupt(info):
                raise KeyboardInterrupt

            with self.assertRaises(KeyboardInterrupt) as cm:
                storylm.train(SMALL_STORIES, cut, steps=8, progress=interrupt, **opts)
            self.assertIn("resume=True", str(cm.exception))
            self.assertTrue(2 <= step_of(cut) < 8, step_of(cut))
            storylm.load(cut).loss("Lily found a ball.")  # a whole model
            summary = storylm.train(SMALL_STORIES, cut, steps=8, progress=False, resume=True, **opts)
            self.assertFalse(summary["interrupted"], summary)
            self.assertEqual(step_of(cut), 8)
            self.assertEqual(sums(cut), sums(whole))

    def test_sigint_while_the_library_runs_saves_first(self):
        """SIGINT, as a terminal's Ctrl-C or a notebook's interrupt sends it, while the library
        trains: train's handler asks the library to stop, it saves, and KeyboardInterrupt is raised."""
        with tempfile.TemporaryDirectory() as d:
            out = os.path.join(d, "m.safetensors")
            code = """
import sys, storylm
def progress(info):
    print("evaluated", info["step"], flush=True)
try:
    storylm.train(sys.argv[1], sys.argv[2], steps=2000, vocab=sys.argv[3], eval_every=2, test_stories=20,
                  threads=1, patience=0, progress=progress)
except KeyboardInterrupt as err:
    print("interrupted:", err, flush=True)
"""
            child = subprocess.Popen([sys.executable, "-c", code, SMALL_STORIES, out,
                                      os.path.join(MODELS, "vocab.txt")], stdout=subprocess.PIPE, text=True)
            first = child.stdout.readline()
            self.assertTrue(first.startswith("evaluated"), first)
            child.send_signal(signal.SIGINT)
            rest, _ = child.communicate(timeout=120)
            self.assertEqual(child.returncode, 0)
            self.assertIn("interrupted: training stopped at step", rest)
            self.assertIn("resume=True", rest)
            self.assertTrue(2 <= step_of(out) < 2000, step_of(out))

    def test_a_resume_refused_says_the_keyword(self):
        opts = dict(vocab=os.path.join(MODELS, "vocab.txt"), eval_every=0, test_stories=5, threads=1)
        with tempfile.TemporaryDirectory() as d:
            out = os.path.join(d, "m.safetensors")
            storylm.train(SMALL_STORIES, out, steps=6, stop_at=2, seed=2, progress=False, **opts)
            with self.assertRaises(storylm.StorylmError) as cm:
                storylm.train(SMALL_STORIES, out, steps=6, resume=True, seed=3, progress=False, **opts)
        self.assertIn("seed=3", cm.exception.message)
        self.assertNotIn("--", cm.exception.message + cm.exception.hint)


if __name__ == "__main__":
    unittest.main()
