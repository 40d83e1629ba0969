"""storylm.train's refusals in Python's words, raised once (run by
tests/e2e_python.sh with test_storylm.py's environment)."""

import json
import os
import subprocess
import tempfile
import unittest

import storylm
from storylm.train import pythons_words
from test_storylm import CLI, MODELS, SMALL_STORIES


def step_of(path):
    """The step a model file was saved at (storylm info's metadata; asked each time, not cached)."""
    out = subprocess.run([CLI, "info", "--json", "-m", path], check=True, capture_output=True, text=True).stdout
    return int(json.loads(out)["metadata"]["step"])


class Refusal(unittest.TestCase):
    def test_a_refusal_is_raised_once_in_pythons_words(self):
        with tempfile.TemporaryDirectory() as d:
            greek = os.path.join(d, "greek.txt")
            with open(greek, "w", encoding="utf-8") as f:  # words the shipped vocabulary cannot spell
                f.write("\n\n".join(" ".join(["αβγ", "δεζ", "ηθι"] * 10) for _ in range(60)) + "\n")
            lines = []
            with self.assertRaises(storylm.StorylmError) as cm:
                storylm.train(greek, os.path.join(d, "m.safetensors"), steps=1, vocab=os.path.join(MODELS, "vocab.txt"),
                              progress=lines.append)
        self.assertIn("[UNK]", cm.exception.message)
        self.assertIn("allow_unknown=True", cm.exception.hint)
        self.assertIn("storylm.train(%r, OUT, vocab=" % greek, cm.exception.hint)
        self.assertNotIn("--", cm.exception.hint)
        self.assertFalse([l for l in lines if "error" in l or "HINT" in l], "the error was printed as progress too")

    def test_flags_and_commands_in_pythons_words(self):
        self.assertEqual(pythons_words("storylm train 's.txt' --vocab v.txt --keep-best (then)"),
                         "storylm.train('s.txt', OUT, vocab='v.txt', keep_best=True) (then)")
        self.assertEqual(pythons_words("give --steps 200 or --lr=0.01; --allow-unknown trains anyway"),
                         "give steps=200 or lr=0.01; allow_unknown=True trains anyway")
        self.assertEqual(pythons_words("cannot open '--help' for reading"), "cannot open '--help' for reading")



@unittest.skipUnless(SMALL_STORIES, "no stories to train on (tests/e2e_python.sh gives them)")
class Interrupt(unittest.TestCase):
    def test_keyboard_interrupt_stops_after_a_save(self):
        """A KeyboardInterrupt in Python (here from progress, as a notebook's interrupt comes) stops the
        program after it saved the model, which resume=True then finishes. The run interrupted is a
        resumed one: a fresh run's Ctrl-C in its first seconds saves nothing, by design."""
        with tempfile.TemporaryDirectory() as d:
            out = os.path.join(d, "m.safetensors")
            # no evaluation, so no save but the last: the model file is the stop's
            opts = dict(vocab=os.path.join(MODELS, "vocab.txt"), eval_every=0, test_stories=5, threads=1, seed=2)
            storylm.train(SMALL_STORIES, out, steps=60, stop_at=10, progress=lambda line: None, **opts)
            self.assertEqual(step_of(out), 10)
            before = os.stat(out).st_mtime_ns

            def interrupt(line):
                if "resuming from step" in line:  # the run is read back: training goes on
                    raise KeyboardInterrupt

            with self.assertRaises(KeyboardInterrupt):
                storylm.train(SMALL_STORIES, out, steps=60, resume=True, progress=interrupt, **opts)
            saved_at = step_of(out)
            self.assertTrue(10 <= saved_at < 60, "stopped early, and saved where it stopped: %d" % saved_at)
            self.assertNotEqual(os.stat(out).st_mtime_ns, before, "the interrupted run saved its model")
            summary = storylm.train(SMALL_STORIES, out, steps=60, progress=lambda line: None, resume=True, **opts)
            self.assertFalse(summary["interrupted"], summary)
            self.assertEqual(step_of(out), 60)

if __name__ == "__main__":
    unittest.main()
