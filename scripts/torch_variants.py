#!/usr/bin/python3
"""PyTorch reference for storylm's variants (issue 12, --pos and --score):
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
Transformer paper's formula.
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
         ("distance", "additive"), ("rope", "additive")]


def tensors_of(pos, score):
    """storylm's tensor table for the variant: (name, shape), in its order."""
    t = [("embedding", (V, D)), ("query", (H, D, KD)), ("key", (H, D, KD)), ("value", (H, D, VD))]
    if pos == "distance":
        t.append(("distance", (H, W)))
    if pos == "absolute":
        t.append(("position", (W, D)))
    if pos == "t5":
        t.append(("distance_bucket", (H, T5_BUCKETS)))
    if score == "general":
        t.append(("score.weight", (H, KD, KD)))
    if score == "additive":
        t += [("score.query", (H, KD, KD)), ("score.key", (H, KD, KD)), ("score.v", (H, KD))]
    Z = D + H * VD
    t += [("hidden.weight", (HID, Z)), ("hidden.bias", (HID,)), ("output.weight", (V, HID)), ("output.bias", (V,))]
    return t


def make_params(rng, pos, score):
    scale = {"embedding": 1.0, "distance": 1.0, "position": 0.7, "distance_bucket": 1.0, "score.v": 1.0}
    out = {}
    for name, shape in tensors_of(pos, score):
        s = scale.get(name, 0.5)
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


def story_z(p, ids, pos, score):
    T = len(ids)
    rows = p["embedding"][torch.as_tensor(ids, dtype=torch.long)]
    t_idx = torch.arange(T)
    if pos == "absolute":
        rows = rows + p["position"][t_idx.clamp(max=W - 1)]
    if pos == "sinusoidal":
        rows = rows + sinusoidal(T)
    q = torch.einsum("td,hdk->htk", rows, p["query"])
    k = torch.einsum("td,hdk->htk", rows, p["key"])
    v = torch.einsum("td,hdk->htk", rows, p["value"])
    if pos == "rope":
        q, k = rope(q, t_idx), rope(k, t_idx)
    if score == "additive":
        a = torch.einsum("hjk,htk->htj", p["score.query"], q)  # (H, T, KD)
        b = torch.einsum("hjk,huk->huj", p["score.key"], k)
        scores = torch.einsum("hj,htuj->htu", p["score.v"], torch.tanh(a[:, :, None, :] + b[:, None, :, :]))
    elif score == "general":
        scores = torch.einsum("hti,hij,huj->htu", q, p["score.weight"], k)
    else:
        scores = q @ k.transpose(1, 2)
        if score == "scaled-dot":
            scores = scores / math.sqrt(KD)
    rel = t_idx.view(1, T) - t_idx.view(T, 1)  # key u minus query t
    back = -rel
    if pos == "distance":
        scores = scores + p["distance"][:, back.clamp(0, W - 1)]
    if pos == "alibi":
        slopes = torch.tensor(alibi_slopes(H), dtype=torch.float64).view(H, 1, 1)
        scores = scores - slopes * back.clamp(min=0)
    if pos == "t5":
        scores = scores + p["distance_bucket"][:, t5_bucket(rel)]
    visible = (back >= 0) & (back < W)
    att = torch.softmax(scores.masked_fill(~visible, float("-inf")), dim=-1)
    out = att @ v
    return torch.cat([rows] + [out[h] for h in range(H)], dim=1)


def loss_and_grads(params, stories, pos, score):
    p = {k: torch.tensor(v, dtype=torch.float64, requires_grad=True) for k, v in params.items()}
    total, n = 0.0, 0
    for ids in stories:
        z = story_z(p, ids, pos, score)
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
    for pos, score in CASES:
        params = make_params(rng, pos, score)
        loss, grads = loss_and_grads(params, stories, pos, score)
        cases.append({
            "pos": pos, "score": score, "loss": loss,
            "tensors": [{"name": name, "shape": list(shape),
                         "value": [float("%.9g" % x) for x in params[name].ravel()],
                         "grad": [float("%.9g" % g) for g in grads[name].ravel()]}
                        for name, shape in tensors_of(pos, score)],
        })
    return {
        "about": "scripts/torch_variants.py: storylm's --pos and --score variants in PyTorch (float64)",
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
