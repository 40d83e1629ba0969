"""storylm in a notebook: a walk-through, cell by cell (docs/python.md).

Run it with Debian's python3 and the installed package:
    PYTHONPATH=PREFIX/lib/python3/dist-packages /usr/bin/python3 docs/python_walkthrough.py
Its output is docs/python_walkthrough.out (tests/e2e_python.sh runs it and
compares). Every number is checked against the storylm program's --json.
docs/python_walkthrough.ipynb is the same cells as a notebook
(scripts/walkthrough_notebook makes it; tests/e2e_notebook.sh runs it)."""

import json
import os
import subprocess
import tempfile

import numpy as np

import storylm


def cli(*args):
    """The storylm program's --json answer (the same install as the package)."""
    return json.loads(subprocess.run([storylm.program(), *args, "--json"], check=True, capture_output=True,
                                     text=True).stdout)


# %% 1. Load the shipped model (the CLI's default) and look at its configuration.
m = storylm.load()
print("model:", os.path.basename(m.path))
print("cfg:", {k: m.cfg[k] for k in ("arch", "layers", "n_heads", "d_model", "key_dim", "value_dim", "parameters")})
print("hook names:", ", ".join(m.hook_names))

# %% 2. Tokens, logits and the loss, against `storylm eval --text TEXT --json`.
text = "Tom gave Lily a red ball. Lily said thank you to Tom."
ids = m.to_ids(text)  # [EOS] + the text's tokens
print("tokens:", " ".join(m.to_str_tokens(text)))
logits = m(text)
print("logits:", logits.shape, logits.dtype)
loss, cli_loss = m.loss(text), cli("eval", "--text", text, "-m", m.path)["loss"]
print("loss %.6f nats; storylm eval --text says %.6f" % (loss, cli_loss))
assert abs(loss - cli_loss) < 1e-6

# %% 3. The activation cache, under TransformerLens's hook names.
logits, cache = m.run_with_cache(text)
for name, array in cache.items():
    print("  %-36s %s" % (name, list(array.shape)))
pattern = cache["blocks.0.attn.hook_pattern"]  # [H, T, T], zeros above the diagonal
last = len(ids) - 1
top = int(np.argmax(pattern[3, last, :last]))
print("head 3 at the last position reads position %d (%r) most, weight %.4f"
      % (top, m.decode([ids[top]]), pattern[3, last, top]))

# %% 4. The heads' patterns as pictures: in a notebook, inline (an HTML view: hover a token to see where it reads,
# a button a head; and matplotlib's picture of head 3 where it is installed).
view = m.attention_view(text)
try:
    from IPython import get_ipython
    in_notebook = get_ipython() is not None
except ImportError:
    in_notebook = False
if in_notebook:
    from IPython.display import display
    display(view)
print("[view] %d heads over %d tokens; view.save(PATH) writes it as a page" % (len(view.head_names), len(view.tokens)))
try:
    import matplotlib
    if not in_notebook:
        matplotlib.use("Agg")
    import matplotlib.pyplot as plt
except ImportError:
    print("[plot] skipped: matplotlib is not installed (apt-get install python3-matplotlib)")
else:
    labels = m.to_str_tokens(text)
    fig, ax = plt.subplots(figsize=(6, 5))
    ax.imshow(pattern[3], cmap="Blues")
    ax.set_xticks(range(len(labels)), labels, rotation=90)
    ax.set_yticks(range(len(labels)), labels)
    ax.set_title("head 3: where each position reads")
    if in_notebook:
        plt.show()
        print("[plot] head 3's pattern drawn above")
    else:
        out = os.path.join(tempfile.gettempdir(), "storylm_head3.png")
        fig.savefig(out, bbox_inches="tight")
        print("[plot] head 3's pattern drawn into", out)

# %% 5. Ablate by hook: head 3's output set to zero is `--ablate 3`.
def zero_head_3(z, hook):
    z[:, 3, :] = 0  # in place; returning a new array works too


ablated = m.loss(text, fwd_hooks=[("blocks.0.attn.hook_z", zero_head_3)])
cli_ablated = cli("eval", "--text", text, "--ablate", "3", "-m", m.path)["loss"]
print("without head 3: loss %.6f; storylm eval --ablate 3 says %.6f" % (ablated, cli_ablated))
assert ablated == np.float32(cli_ablated) or ablated == cli_ablated

# %% 6. Patch by hook: the clean run's head outputs put into a corrupt run.
clean = "Tom gave Lily a red ball. Lily said thank you to"
corrupt = "Lily gave Tom a red ball. Tom said thank you to"
answer, wrong = m.tokenize("tom")[0], m.tokenize("lily")[0]
_, clean_cache = m.run_with_cache(clean, names_filter="blocks.0.attn.hook_z")


def logit_diff(logits):
    return float(logits[-1, answer]) - float(logits[-1, wrong])


ld_clean, ld_corrupt = logit_diff(m(clean)), logit_diff(m(corrupt))
want = cli("patch", clean, corrupt, "--answer", "tom", "--wrong", "lily", "-m", m.path)
print("logit difference tom - lily: clean %.4f, corrupt %.4f" % (ld_clean, ld_corrupt))
print("head  patched by hook  storylm patch")
for h in range(m.cfg.n_heads):
    def put_clean(z, hook, h=h):
        z[-1, h] = clean_cache["blocks.0.attn.hook_z"][-1, h]

    patched = logit_diff(m.run_with_hooks(corrupt, fwd_hooks=[("blocks.0.attn.hook_z", put_clean)]))
    restored = (patched - ld_corrupt) / (ld_clean - ld_corrupt)
    print("%4d  %15.4f  %13.4f" % (h, restored, want["heads"][h]["output"]))
    assert abs(restored - want["heads"][h]["output"]) < 1e-4

# %% 7. Generation: the CLI's text, greedy here.
story = m.generate("Tom gave Lily a", max_tokens=25, temperature=0)
print("generate:", story)
assert story == cli("generate", "Tom gave Lily a", "-n", "25", "-t", "0", "-m", m.path)["samples"][0]["text"]

# %% 8. A batch: each row is the text run alone, bit for bit; shorter rows are padded on the right with 0.
texts = [text, clean, "Lily found a ball."]
batch_logits, batch_cache = m.run_with_cache(texts)
print("batch logits:", batch_logits.shape, "pattern:", batch_cache["pattern", 0].shape)
print("mask:", m.attention_mask(texts).sum(1).tolist(), "tokens a row")
for i, t in enumerate(texts):
    T = len(m.to_ids(t))
    assert np.array_equal(batch_logits[i, :T], m(t))
print("losses a row:", ["%.6f" % x for x in m.loss(texts)])

# %% 9. Weights: the logit lens. The hidden layer through W_U and b_U gives the logits.
print("W_E", m.W_E.shape, "W_Q[0]", m.W_Q[0].shape, "W_in", m.W_in.shape, "W_U", m.W_U.shape)
lens = cache["hook_hidden"] @ m.W_U + m.b_U
print("lens and pass agree to 1e-4: %s; top guess after the text: %r"  # numpy sums in another order
      % (bool(np.allclose(lens, logits, atol=1e-4)), m.tokenizer.vocab[int(lens[-1].argmax())]))
heads = cache.stack_head_results()  # each head's share of the hidden layer's input sum
share = np.abs(heads[:, last]).sum(-1)
print("the head that writes most at the last position: head %d" % int(share.argmax()))
print("all numbers equal the CLI's")
