"""Pictures for notebooks: attention patterns as a self-contained HTML view
(of the kind CircuitsVis draws: hover a token to see where it reads), shown
inline by Jupyter through _repr_html_, with no script or style from the
network."""

import html
import itertools
import json
import os

import numpy as np

_IDS = itertools.count()

_SCRIPT = """
(function () {
  var root = document.getElementById("%(id)s"), data = %(data)s;
  var heads = root.querySelector(".slm-heads"), toks = root.querySelector(".slm-tokens");
  var info = root.querySelector(".slm-info"), grid = root.querySelector(".slm-grid");
  var head = 0, T = data.tokens.length;
  function paint(q) {
    var row = q === null ? null : data.pattern[head][q];
    toks.querySelectorAll("span").forEach(function (s, k) {
      var w = row === null ? 0 : row[k];
      s.style.background = "rgba(220, 60, 40, " + w + ")";
      s.style.outline = k === q ? "2px solid #333" : "none";
    });
    info.textContent = q === null ? "hover a token: where it reads (head " + data.heads[head] + ")"
      : "'" + data.tokens[q] + "' at " + q + " reads: " + row.map(function (w, k) { return [w, k]; })
          .filter(function (p) { return p[0] > 0.05; }).sort(function (a, b) { return b[0] - a[0]; })
          .slice(0, 5).map(function (p) { return "'" + data.tokens[p[1]] + "' " + p[0].toFixed(2); }).join(", ");
  }
  function draw() {
    var c = grid.getContext("2d"), n = Math.max(1, Math.floor(240 / T));
    grid.width = grid.height = n * T;
    for (var q = 0; q < T; q++) for (var k = 0; k < T; k++) {
      c.fillStyle = "rgba(220, 60, 40, " + data.pattern[head][q][k] + ")";
      c.fillRect(k * n, q * n, n, n);
    }
    heads.querySelectorAll("button").forEach(function (b, h) { b.style.fontWeight = h === head ? "bold" : "normal"; });
    paint(null);
  }
  data.heads.forEach(function (name, h) {
    var b = document.createElement("button");
    b.textContent = name;
    b.onclick = function () { head = h; draw(); };
    heads.appendChild(b);
  });
  data.tokens.forEach(function (t, q) {
    var s = document.createElement("span");
    s.textContent = t;
    s.style.padding = "1px 3px"; s.style.margin = "1px"; s.style.display = "inline-block";
    s.onmouseenter = function () { paint(q); };
    s.onmouseleave = function () { paint(null); };
    toks.appendChild(s);
  });
  draw();
})();
"""


class AttentionView:
    """Attention weights pattern [H, T, T] (or one head's [T, T]) over tokens
    (T pieces) as HTML: a button a head, the tokens (hover one to colour each
    token by the weight it reads it with) and the head's pattern as a grid.
    Jupyter shows it inline (_repr_html_); .html is the page's part; save(path)
    writes a page."""

    def __init__(self, tokens, pattern, head_names=None, title=""):
        pattern = np.asarray(pattern, np.float64)
        if pattern.ndim == 2:
            pattern = pattern[None]
        T = len(tokens)
        if pattern.ndim != 3 or pattern.shape[1:] != (T, T):
            raise ValueError("pattern has shape %s; %d tokens need [H, %d, %d]" % (pattern.shape, T, T, T))
        self.tokens = [str(t) for t in tokens]
        self.pattern = pattern
        self.head_names = [str(h) for h in (head_names or range(pattern.shape[0]))]
        self.title = title

    @property
    def html(self):
        view_id = "slm-attention-%d" % next(_IDS)
        data = {"tokens": self.tokens, "heads": self.head_names,
                "pattern": [[[round(float(w), 4) for w in row] for row in h] for h in self.pattern]}
        # "</" would end the script inside a piece: JSON may write it as "<\/"
        text = json.dumps(data).replace("</", "<\\/")
        return ('<div id="%s" class="slm-attention" style="font-family: sans-serif; font-size: 13px">'
                '<div><b>%s</b></div><div class="slm-heads"></div>'
                '<div class="slm-tokens" style="margin: 6px 0; line-height: 1.9"></div>'
                '<div class="slm-info" style="color: #555; min-height: 1.4em"></div>'
                '<canvas class="slm-grid" style="image-rendering: pixelated; border: 1px solid #ccc"></canvas>'
                '<script>%s</script></div>'
                % (view_id, html.escape(self.title), _SCRIPT % {"id": view_id, "data": text}))

    def _repr_html_(self):
        return self.html

    def __repr__(self):
        return "AttentionView(%d heads, %d tokens%s)" % (len(self.head_names), len(self.tokens),
                                                         ": " + self.title if self.title else "")

    def save(self, path):
        with open(path, "w", encoding="utf-8") as f:
            f.write("<!doctype html><meta charset=utf-8><title>%s</title>%s\n" % (html.escape(self.title), self.html))


def attention(model, text_or_ids, layer=0, ablate=None):
    """The view of layer's heads on one text (model's run_with_cache), heads named
    as --ablate names them ("3"; "2:3" on a model of several layers)."""
    _, cache = model.run_with_cache(text_or_ids, names_filter="blocks.%d.attn.hook_pattern" % layer, ablate=ablate)
    pattern = cache["pattern", layer]
    if pattern.ndim == 4:
        raise ValueError("one text at a time: give a text, not a batch")
    several = model.cfg.n_layers > 1
    names = ["%d:%d" % (layer + 1, h) if several else str(h) for h in range(pattern.shape[0])]
    return AttentionView(model.to_str_tokens(text_or_ids), pattern, names,
                         "layer %d of %s" % (layer + 1, os.path.basename(model.path)))
