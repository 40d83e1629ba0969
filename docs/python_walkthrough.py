"""storylm in a notebook: a walk-through, cell by cell (docs/python.md).

Run it with Debian's python3 and the installed package:
    PYTHONPATH=PREFIX/lib/python3/dist-packages /usr/bin/python3 docs/python_walkthrough.py
Its output is docs/python_walkthrough.out (tests/e2e_python.sh runs it and
compares). Every number is checked against the storylm program's --json."""

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

# %% 4. A head's pattern as a picture (matplotlib, where it is installed).
try:
    import matplotlib
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
print("all numbers equal the CLI's")
