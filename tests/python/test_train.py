"""storylm.train's refusals in Python's words, raised once (run by
tests/e2e_python.sh with test_storylm.py's environment)."""

import os
import tempfile
import unittest

import storylm
from storylm.train import pythons_words
from test_storylm import MODELS


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


if __name__ == "__main__":
    unittest.main()
