"""The attention view for notebooks: self-contained HTML holding the cache's
weights (run by tests/e2e_python.sh with test_storylm.py's environment)."""

import json
import os
import re
import shutil
import subprocess
import tempfile
import unittest

import numpy as np

import storylm
from test_storylm import MODELS, TEXT


def view_data(html):
    """The JSON the view's script reads."""
    found = re.search(r"var root = document.getElementById\(\"[^\"]+\"\), data = (\{.*?\});\n", html, re.S)
    return json.loads(found.group(1).replace("<\\/", "</"))


class AttentionView(unittest.TestCase):
    def test_the_view_holds_the_caches_pattern_and_nothing_from_the_network(self):
        for name, layer, heads in [("tinystories", 0, "3"), ("tinystories-layers2", 1, "2:3"),
                                   ("tinystories-transformer", 1, "2:3")]:
            m = storylm.load(os.path.join(MODELS, name + ".safetensors"))
            view = m.attention_view(TEXT, layer=layer)
            html = view._repr_html_()
            self.assertNotRegex(html, r"https?://|src=|<link", "self-contained")
            data = view_data(html)
            self.assertEqual(data["tokens"], m.to_str_tokens(TEXT))
            self.assertEqual(data["heads"][3], heads)
            _, cache = m.run_with_cache(TEXT)
            self.assertTrue(np.allclose(data["pattern"], cache["pattern", layer], atol=5e-5))

    def test_pieces_are_text_not_markup(self):
        view = storylm.AttentionView(["</script><b>", "a"], np.eye(2), title="<i>x</i>")
        html = view.html
        self.assertEqual(html.count("</script>"), 1)
        self.assertIn("&lt;i&gt;x&lt;/i&gt;", html)
        self.assertEqual(view_data(html)["tokens"][0], "</script><b>")
        with tempfile.TemporaryDirectory() as d:
            view.save(os.path.join(d, "v.html"))
            with open(os.path.join(d, "v.html"), encoding="utf-8") as f:
                self.assertTrue(f.read().startswith("<!doctype html>"))
        with self.assertRaises(ValueError):
            storylm.AttentionView(["a"], np.eye(2))


    @unittest.skipUnless(shutil.which("node"), "no node to run the view's script")
    def test_hovering_a_token_says_where_it_reads(self):
        """The view's script, run by node on a stand-in page: hover 'ball' with head 3 chosen."""
        m = storylm.load(os.path.join(MODELS, "tinystories.safetensors"))
        html = m.attention_view("Lily found a ball.").html
        script = re.search(r"<script>(.*)</script>", html, re.S).group(1)
        page = """
function el(tag) { return {children: [], style: {}, textContent: "", appendChild(c) { this.children.push(c); },
  querySelector(s) { return this.parts[s]; }, querySelectorAll(s) { return this.children; },
  getContext() { return {fillRect() {}}; }}; }
var root = el("div");
root.parts = {".slm-heads": el("div"), ".slm-tokens": el("div"), ".slm-info": el("div"), ".slm-grid": el("canvas")};
global.document = {getElementById() { return root; }, createElement: el};
""" + script + """
root.parts[".slm-heads"].children[3].onclick();
root.parts[".slm-tokens"].children[4].onmouseenter();
console.log(root.parts[".slm-info"].textContent);
"""
        out = subprocess.run(["node", "-e", page], capture_output=True, text=True, check=True).stdout
        _, cache = m.run_with_cache("Lily found a ball.")
        row = cache["pattern", 0][3, 4]
        top = int(np.argmax(row))
        self.assertIn("'ball' at 4 reads: '%s' %.2f" % (m.to_str_tokens("Lily found a ball.")[top], row[top]), out)


if __name__ == "__main__":
    unittest.main()
