#!/usr/bin/python3
"""PyTorch reference for storylm's variants (issue 12, --pos, --score and --layers):
each variant written independently in PyTorch, the way scripts/torch_reference.py
checks the default network, run on a tiny deterministic case, its loss and every
gradient written as a test fixture.

    /usr/bin/python3 scripts/torch_variants.py [--out tests/fixtures] [--check]

Writes tests/fixtures/variants.json; tests/test_variants_torch.c reads it, so the
tests never need torch. Running the script again rewrites the file byte for
byte (numpy's seeded RandomState, float64). --check only compares with the file.

The case: a tiny network (vocabulary 13, rows of 8, 2 heads of queries and keys
of 4 and values of 4, window 6, hidden 8) on 2 stories of 15 and 5 tokens (the
first longer than the window, so absolute positions past the window and the
window's cut both show). Parameters random, large enough that attention is far
from even; the variants' own tensors random too (not their initial zeros).
Positions in PyTorch's idiom: RoPE by complex multiplication (LLaMA's
interleaved pairs), ALiBi's slopes by the reference get_slopes, T5's buckets
by its _relative_position_bucket, learned positions by nn.Embedding-style
lookup (clamped to the last row past the window), sinusoidal tags by the
Transformer paper's formula. --layers N: layer l+1's heads read the row beside
layer l's heads (torch.cat, the chapter's way), the hidden layer the row and
every layer's heads; each layer its own query, key, value and position/score
tensors, named "layer2.query", ... as storylm names them.
"""
import argparse
import json
import math
import os
import sys

import numpy as np
import torch

V, D, H, KD, VD, W, HID = 13, 8, 2, 4, 4, 6, 8
EOS = 1
LENGTHS = [15, 5]
SEED = 20261201
T5_BUCKETS, T5_MAX = 32, 128
CASES = [("rope", "scaled-dot"), ("alibi", "scaled-dot"), ("absolute", "scaled-dot"), ("t5", "scaled-dot"),
         ("sinusoidal", "scaled-dot"), ("none", "scaled-dot"), ("distance", "dot"), ("distance", "general"),
         ("distance", "additive"), ("rope", "additive"),
         ("distance", "scaled-dot", 2), ("rope", "scaled-dot", 2), ("t5", "additive", 2), ("alibi", "general", 3)]


def layer_names(l):
    """The prefix of layer l's own tensors (l from 0)."""
    return "" if l == 0 else "layer%d." % (l + 1)


def tensors_of(pos, score, layers=1):
    """storylm's tensor table for the variant: (name, shape), in its order."""
    t = [("embedding", (V, D))]
    for l in range(layers):
        n, din = layer_names(l), D if l == 0 else D + H * VD
        t += [(n + "query", (H, din, KD)), (n + "key", (H, din, KD)), (n + "value", (H, din, VD))]
        if pos == "distance":
            t.append((n + "distance", (H, W)))
        if pos == "absolute" and l == 0:
            t.append(("position", (W, D)))
        if pos == "t5":
            t.append((n + "distance_bucket", (H, T5_BUCKETS)))
        if score == "general":
            t.append((n + "score.weight", (H, KD, KD)))
        if score == "additive":
            t += [(n + "score.query", (H, KD, KD)), (n + "score.key", (H, KD, KD)), (n + "score.v", (H, KD))]
    Z = D + layers * H * VD
    t += [("hidden.weight", (HID, Z)), ("hidden.bias", (HID,)), ("output.weight", (V, HID)), ("output.bias", (V,))]
    return t


def make_params(rng, pos, score, layers=1):
    scale = {"embedding": 1.0, "distance": 1.0, "position": 0.7, "distance_bucket": 1.0, "score.v": 1.0}
    out = {}
    for name, shape in tensors_of(pos, score, layers):
        s = scale.get(name.split(".", 1)[1] if name.startswith("layer") else name, 0.5)
        out[name] = rng.uniform(-s, s, size=shape).astype(np.float32)
    return out


def alibi_slopes(n):
    """The ALiBi paper's get_slopes for a power of two heads."""
    start = 2 ** (-(2 ** -(math.log2(n) - 3)))
    return [start * start ** i for i in range(n)]


def t5_bucket(relative_position):
    """T5's _relative_position_bucket, one-directional (bidirectional=False)."""
    n = torch.clamp(-relative_position, min=0)
    max_exact = T5_BUCKETS // 2
    is_small = n < max_exact
    large = max_exact + (torch.log(n.float().clamp(min=1) / max_exact) / math.log(T5_MAX / max_exact)
                         * (T5_BUCKETS - max_exact)).to(torch.long)
    large = torch.min(large, torch.full_like(large, T5_BUCKETS - 1))
    return torch.where(is_small, n, large)


def rope(x, positions):
    """x (H, T, KD) turned pair by pair: complex multiplication by e^{i t theta_j}."""
    theta = 10000.0 ** (-torch.arange(0, KD, 2, dtype=torch.float64) / KD)
    angles = positions.view(-1, 1).double() * theta.view(1, -1)
    turn = torch.polar(torch.ones_like(angles), angles).to(torch.complex128)
    xc = torch.view_as_complex(x.reshape(*x.shape[:-1], KD // 2, 2).contiguous())
    return torch.view_as_real(xc * turn).reshape(x.shape)


def sinusoidal(T):
    pe = torch.zeros(T, D, dtype=torch.float64)
    t = torch.arange(T, dtype=torch.float64).view(T, 1)
    div = torch.exp(torch.arange(0, D, 2, dtype=torch.float64) * (-math.log(10000.0) / D))
    pe[:, 0::2] = torch.sin(t * div)
    pe[:, 1::2] = torch.cos(t * div)
    return pe


def heads(p, n, x, pos, score):
    """One layer's heads (tensors prefixed n) over their input x (T, Din) -> (H, T, VD)."""
    T = x.shape[0]
    t_idx = torch.arange(T)
    q = torch.einsum("td,hdk->htk", x, p[n + "query"])
    k = torch.einsum("td,hdk->htk", x, p[n + "key"])
    v = torch.einsum("td,hdk->htk", x, p[n + "value"])
    if pos == "rope":
        q, k = rope(q, t_idx), rope(k, t_idx)
    if score == "additive":
        a = torch.einsum("hjk,htk->htj", p[n + "score.query"], q)  # (H, T, KD)
        b = torch.einsum("hjk,huk->huj", p[n + "score.key"], k)
        scores = torch.einsum("hj,htuj->htu", p[n + "score.v"], torch.tanh(a[:, :, None, :] + b[:, None, :, :]))
    elif score == "general":
        scores = torch.einsum("hti,hij,huj->htu", q, p[n + "score.weight"], k)
    else:
        scores = q @ k.transpose(1, 2)
        if score == "scaled-dot":
            scores = scores / math.sqrt(KD)
    rel = t_idx.view(1, T) - t_idx.view(T, 1)  # key u minus query t
    back = -rel
    if pos == "distance":
        scores = scores + p[n + "distance"][:, back.clamp(0, W - 1)]
    if pos == "alibi":
        slopes = torch.tensor(alibi_slopes(H), dtype=torch.float64).view(H, 1, 1)
        scores = scores - slopes * back.clamp(min=0)
    if pos == "t5":
        scores = scores + p[n + "distance_bucket"][:, t5_bucket(rel)]
    visible = (back >= 0) & (back < W)
    att = torch.softmax(scores.masked_fill(~visible, float("-inf")), dim=-1)
    return att @ v


def story_z(p, ids, pos, score, layers=1):
    T = len(ids)
    rows = p["embedding"][torch.as_tensor(ids, dtype=torch.long)]
    t_idx = torch.arange(T)
    if pos == "absolute":
        rows = rows + p["position"][t_idx.clamp(max=W - 1)]
    if pos == "sinusoidal":
        rows = rows + sinusoidal(T)
    outs, x = [], rows
    for l in range(layers):
        out = heads(p, layer_names(l), x, pos, score)
        flat = torch.cat([out[h] for h in range(H)], dim=1)  # (T, H*VD), head 0 first
        outs.append(flat)
        x = torch.cat([rows, flat], dim=1)  # the next layer reads the row beside these heads
    return torch.cat([rows] + outs, dim=1)


def loss_and_grads(params, stories, pos, score, layers=1):
    p = {k: torch.tensor(v, dtype=torch.float64, requires_grad=True) for k, v in params.items()}
    total, n = 0.0, 0
    for ids in stories:
        z = story_z(p, ids, pos, score, layers)
        y = torch.tanh(z @ p["hidden.weight"].T + p["hidden.bias"])
        logits = y @ p["output.weight"].T + p["output.bias"]
        target = torch.as_tensor(ids[1:], dtype=torch.long)
        total = total + torch.nn.functional.cross_entropy(logits[:-1], target, reduction="sum")
        n += len(ids) - 1
    loss = total / n
    loss.backward()
    return loss.item(), {k: t.grad.numpy() for k, t in p.items()}


def build():
    rng = np.random.RandomState(SEED)
    torch.set_num_threads(1)
    stories = []
    for n in LENGTHS:
        ids = rng.randint(0, V, size=n).astype(np.int32)
        ids[0] = EOS
        stories.append(ids)
    cases = []
    for case in CASES:
        pos, score, layers = case if len(case) == 3 else case + (1,)
        params = make_params(rng, pos, score, layers)
        loss, grads = loss_and_grads(params, stories, pos, score, layers)
        cases.append({
            "pos": pos, "score": score, "loss": loss,
            "tensors": [{"name": name, "shape": list(shape),
                         "value": [float("%.9g" % x) for x in params[name].ravel()],
                         "grad": [float("%.9g" % g) for g in grads[name].ravel()]}
                        for name, shape in tensors_of(pos, score, layers)],
        })
        if layers > 1:  # only then: the one-layer cases stay as they were
            cases[-1]["layers"] = layers
    return {
        "about": "scripts/torch_variants.py: storylm's --pos, --score and --layers variants in PyTorch (float64)",
        "config": {"vocab_size": V, "row_dim": D, "n_heads": H, "key_dim": KD, "value_dim": VD, "window": W,
                   "hidden_dim": HID},
        "stories": [[int(x) for x in s] for s in stories],
        "cases": cases,
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "..", "tests", "fixtures"))
    ap.add_argument("--check", action="store_true", help="compare with the file there, write nothing")
    args = ap.parse_args()
    text = json.dumps(build(), indent=0, sort_keys=True) + "\n"
    path = os.path.join(args.out, "variants.json")
    if args.check:
        same = os.path.exists(path) and open(path).read() == text
        print("variants.json " + ("matches" if same else "differs"))
        return 0 if same else 1
    with open(path, "w") as f:
        f.write(text)
    print("wrote %s (%d cases, %d bytes)" % (path, len(CASES), len(text)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
