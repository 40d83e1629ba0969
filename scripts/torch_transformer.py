#!/usr/bin/python3
"""PyTorch reference for storylm's transformer (--arch transformer), written
from TransformerLens's conventions (HookedTransformer's LayerNorm, Attention,
MLP and Unembed, with its parameter names and shapes), run on a tiny
deterministic case, its loss and every gradient written as a test fixture.

    /usr/bin/python3 scripts/torch_transformer.py [--out tests/fixtures] [--check]

Writes tests/fixtures/transformer.json; tests/test_transformer_torch.c reads
it, so the tests never need torch. Running the script again rewrites the file
byte for byte (numpy's seeded RandomState, float64). --check only compares.

The case: 2 blocks, vocabulary 13, d_model 8, 2 heads of d_head 4, d_mlp 12,
n_ctx 6, on 2 stories of 5 and 15 tokens. The first fits in n_ctx, where this
is TransformerLens's forward exactly (its activations are written under
TransformerLens's hook names, "hooks", without the batch axis; every point
TransformerLens has for this block, the attention scores' masked -inf as null); the second is longer, where storylm
goes on as it documents (each position reads its latest n_ctx tokens; the
absolute scheme's last row W_pos[n_ctx-1] stands for every later position),
so the window's cut is checked too. One more case ties the unembedding to
the embedding (--tie-embeddings: logits = LN_final(resid) @ W_E.T + b_U, no
unembed.W_U), drawn after the others so that their numbers stay as they were. Parameters random (LayerNorm weights
near 1), large enough that attention is far from even.

TransformerLens's conventions, as written below:
  LN(x) = (x - mean) / sqrt(mean((x - mean)^2) + 1e-5) * w + b
  q = einsum("pm,hmd->phd", x, W_Q) + b_Q (k, v alike); rotary on q and k with
      rotary_adjacent_pairs=True, rotary_base 10000, rotary_dim = d_head
  scores = q.k / sqrt(d_head) (+ ALiBi's -m_h (t-u), m_h = 2^(-8(h+1)/H)),
      causal mask, softmax over keys; z = pattern @ v
  attn_out = einsum("phd,hdm->pm", z, W_O) + b_O
  mlp_out = act(x @ W_in + b_in) @ W_out + b_out; gelu = F.gelu,
      gelu_new = GPT-2's tanh form
  logits = LN_final(resid) @ W_U + b_U; loss: mean cross-entropy of the next token
"""
import argparse
import json
import math
import os
import sys

import numpy as np
import torch
import torch.nn.functional as F

V, D, H, DH, DMLP, NCTX, LAYERS = 13, 8, 2, 4, 12, 6, 2
EOS = 1
LENGTHS = [5, 15]
SEED = 20261202
CASES = [("absolute", "gelu"), ("rope", "gelu"), ("rope", "gelu_new"), ("alibi", "relu"), ("none", "gelu")]
TIED = [("alibi", "gelu")]  # --tie-embeddings: W_U is W_E.T (the cases above keep their bytes: drawn after them)


def tensor_shapes(pos, tied=False):
    """(name, shape) in storylm's table order (transformer_params.c); tied: no unembed.W_U."""
    t = [("embed.W_E", (V, D))]
    if pos == "absolute":
        t.append(("pos_embed.W_pos", (NCTX, D)))
    for l in range(LAYERS):
        b = "blocks.%d." % l
        t += [(b + "ln1.w", (D,)), (b + "ln1.b", (D,)), (b + "attn.W_Q", (H, D, DH)), (b + "attn.W_K", (H, D, DH)),
              (b + "attn.W_V", (H, D, DH)), (b + "attn.b_Q", (H, DH)), (b + "attn.b_K", (H, DH)),
              (b + "attn.b_V", (H, DH)), (b + "attn.W_O", (H, DH, D)), (b + "attn.b_O", (D,)), (b + "ln2.w", (D,)),
              (b + "ln2.b", (D,)), (b + "mlp.W_in", (D, DMLP)), (b + "mlp.b_in", (DMLP,)),
              (b + "mlp.W_out", (DMLP, D)), (b + "mlp.b_out", (D,))]
    t += [("ln_final.w", (D,)), ("ln_final.b", (D,))] + ([] if tied else [("unembed.W_U", (D, V))])
    return t + [("unembed.b_U", (V,))]


def make_params(rng, pos, tied=False):
    p = {}
    for name, shape in tensor_shapes(pos, tied):
        x = rng.normal(0.0, 0.5, size=shape)
        if name.endswith(".w"):
            x = 1.0 + 0.3 * rng.normal(size=shape)
        p[name] = torch.tensor(x, dtype=torch.float64, requires_grad=True)
    return p


def layer_norm(x, w, b, hooks=None, name=None):
    """TransformerLens's LayerNorm; hooks gets name.hook_scale [pos, 1] and name.hook_normalized."""
    x = x - x.mean(-1, keepdim=True)
    scale = (x.pow(2).mean(-1, keepdim=True) + 1e-5).sqrt()
    y = x / scale * w + b
    if hooks is not None:
        hooks.update({name + ".hook_scale": scale, name + ".hook_normalized": y})
    return y


def rotary(x):
    """TransformerLens's apply_rotary with rotary_adjacent_pairs=True: x [pos, head, d_head]."""
    T = x.shape[0]
    freq = 10000.0 ** (torch.arange(DH // 2, dtype=torch.float64) / (DH / 2))
    freq = freq.repeat_interleave(2)  # "d -> (d 2)"
    angles = torch.arange(T, dtype=torch.float64)[:, None] / freq[None, :]
    sin, cos = torch.sin(angles)[:, None, :], torch.cos(angles)[:, None, :]
    flip = torch.empty_like(x)
    flip[..., ::2] = -x[..., 1::2]
    flip[..., 1::2] = x[..., ::2]
    return x * cos + flip * sin


def alibi_bias(T):
    """-m_h (t - u) for query t, key u: [head, t, u]."""
    slopes = torch.tensor([2.0 ** (-8.0 * (h + 1) / H) for h in range(H)], dtype=torch.float64)
    t = torch.arange(T, dtype=torch.float64)
    return -slopes[:, None, None] * (t[:, None] - t[None, :])


def attention(p, l, x, pos, hooks):
    b = "blocks.%d.attn." % l
    T = x.shape[0]
    q = torch.einsum("pm,hmd->phd", x, p[b + "W_Q"]) + p[b + "b_Q"]
    k = torch.einsum("pm,hmd->phd", x, p[b + "W_K"]) + p[b + "b_K"]
    v = torch.einsum("pm,hmd->phd", x, p[b + "W_V"]) + p[b + "b_V"]
    hooks.update({b + "hook_q": q, b + "hook_k": k, b + "hook_v": v})  # before rotary, as TransformerLens's
    if pos == "rope":
        q, k = rotary(q), rotary(k)
    scores = torch.einsum("qhd,khd->hqk", q, k) / math.sqrt(DH)
    if pos == "alibi":
        scores = scores + alibi_bias(T)
    t = torch.arange(T)
    visible = (t[None, :] <= t[:, None]) & (t[None, :] > t[:, None] - NCTX)  # causal, the latest n_ctx keys
    scores = scores.masked_fill(~visible, float("-inf"))
    pattern = scores.softmax(-1)
    z = torch.einsum("hqk,khd->qhd", pattern, v)
    result = torch.einsum("qhd,hdm->qhm", z, p[b + "W_O"])  # each head's part, without b_O
    hooks.update({b + "hook_attn_scores": scores, b + "hook_pattern": pattern, b + "hook_z": z,
                  b + "hook_result": result})
    return torch.einsum("qhd,hdm->qm", z, p[b + "W_O"]) + p[b + "b_O"]


def act(x, name):
    if name == "gelu":
        return F.gelu(x)
    if name == "gelu_new":
        return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * torch.pow(x, 3.0))))
    return F.relu(x)


def story_loss_sum(p, ids, pos, act_name, hooks):
    """The story's summed loss; hooks gets every activation under TransformerLens's hook names."""
    T = len(ids)
    resid = p["embed.W_E"][torch.tensor(ids)]
    hooks["hook_embed"] = resid
    if pos == "absolute":
        hooks["hook_pos_embed"] = p["pos_embed.W_pos"][torch.clamp(torch.arange(T), max=NCTX - 1)]
        resid = resid + hooks["hook_pos_embed"]
    for l in range(LAYERS):
        b = "blocks.%d." % l
        hooks[b + "hook_resid_pre"] = resid
        hooks[b + "hook_attn_out"] = attention(p, l, layer_norm(resid, p[b + "ln1.w"], p[b + "ln1.b"], hooks, b + "ln1"),
                                               pos, hooks)
        resid = resid + hooks[b + "hook_attn_out"]
        hooks[b + "hook_resid_mid"] = resid
        x = layer_norm(resid, p[b + "ln2.w"], p[b + "ln2.b"], hooks, b + "ln2")
        hooks[b + "mlp.hook_pre"] = x @ p[b + "mlp.W_in"] + p[b + "mlp.b_in"]
        hooks[b + "mlp.hook_post"] = act(hooks[b + "mlp.hook_pre"], act_name)
        hooks[b + "hook_mlp_out"] = hooks[b + "mlp.hook_post"] @ p[b + "mlp.W_out"] + p[b + "mlp.b_out"]
        resid = resid + hooks[b + "mlp.hook_post"] @ p[b + "mlp.W_out"] + p[b + "mlp.b_out"]  # the order it had
        hooks[b + "hook_resid_post"] = resid
    layer_norm(resid, p["ln_final.w"], p["ln_final.b"], hooks, "ln_final")
    W_U = p["unembed.W_U"] if "unembed.W_U" in p else p["embed.W_E"].T  # tied: the embedding read backwards
    logits = hooks["ln_final.hook_normalized"] @ W_U + p["unembed.b_U"]
    hooks["hook_logits"] = logits
    return F.cross_entropy(logits[:-1], torch.tensor(ids[1:]), reduction="sum")


def hook_values(hooks):
    """{name: flat floats}; the attention scores' masked entries, -inf, as null (JSON has no infinity)."""
    return {name: [float(x) if math.isfinite(x) else None for x in a.detach().flatten().tolist()]
            for name, a in hooks.items()}


def build():
    rng = np.random.RandomState(SEED)
    stories = [[EOS] + [int(x) for x in rng.randint(0, V, size=n - 1)] for n in LENGTHS]
    n_predicted = sum(n - 1 for n in LENGTHS)
    cases = []
    for pos, act_name, tied in [c + (False,) for c in CASES] + [c + (True,) for c in TIED]:
        p = make_params(rng, pos, tied)
        hooks = [{} for _ in stories]
        loss = sum(story_loss_sum(p, ids, pos, act_name, h) for ids, h in zip(stories, hooks)) / n_predicted
        loss.backward()
        tensors = [{"name": name, "shape": list(shape), "value": [float(x) for x in p[name].detach().flatten()],
                    "grad": [float(x) for x in p[name].grad.flatten()]} for name, shape in tensor_shapes(pos, tied)]
        # the first story's activations (it fits in n_ctx: TransformerLens's forward exactly), by hook name
        first = hook_values(hooks[0])
        cases.append({"pos": pos, "act_fn": act_name, "loss": float(loss), "tensors": tensors, "hooks": first})
        if tied:
            cases[-1]["tie_embeddings"] = True
    return {"config": {"vocab_size": V, "d_model": D, "n_heads": H, "d_head": DH, "d_mlp": DMLP, "n_ctx": NCTX,
                       "n_layers": LAYERS},
            "stories": stories, "cases": cases}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "..", "tests", "fixtures"))
    ap.add_argument("--check", action="store_true", help="compare with the file instead of writing it")
    args = ap.parse_args()
    text = json.dumps(build(), indent=0, sort_keys=True) + "\n"
    path = os.path.join(args.out, "transformer.json")
    if args.check:
        same = open(path).read() == text
        print("%s: %s" % (path, "the same" if same else "DIFFERENT"))
        return 0 if same else 1
    with open(path + ".tmp", "w") as f:
        f.write(text)
    os.replace(path + ".tmp", path)
    print("wrote %s (%d cases)" % (path, len(CASES) + len(TIED)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
