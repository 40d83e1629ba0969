#!/usr/bin/python3
"""PyTorch reference for training's dropout (include/storylm/dropout.h): the
network of SPEC section 4 written again in PyTorch, with dropout on z (the
hidden layer's input) and on the attention weights, the masks given
explicitly, so that the C code can be checked against it with the same masks.

    /usr/bin/python3 scripts/torch_dropout.py [--out tests/fixtures/dropout.json] [--check]

Two small cases (attention heads of 2/3 and of 8/16 numbers, windows shorter
than the longest story), 3 stories packed in one batch, random float32
parameters and masks from numpy's seeded RandomState; the loss and every
gradient in float64. tests/test_regularise.c reads the JSON, so the tests
never need torch. Running it again rewrites the file byte for byte.

Mask layout (as in C's Dropout): hidden_mask (N, Z) by packed position,
attention_mask (H, N, N) [h][p][u] for key u of position p; 1 keeps, 0 drops;
kept numbers are scaled by 1/(1-P).
"""
import argparse
import json
import sys

import numpy as np
import torch

CASES = [
    {"name": "tiny", "V": 11, "D": 5, "H": 3, "KD": 2, "VD": 3, "W": 4, "HID": 6, "lengths": [9, 4, 2],
     "p_hidden": 0.3, "p_attention": 0.25},
    {"name": "real_heads", "V": 11, "D": 6, "H": 2, "KD": 8, "VD": 16, "W": 5, "HID": 6, "lengths": [12, 6, 3],
     "p_hidden": 0.2, "p_attention": 0.4},
]
SEED = 20261201


def make_case(c, rng):
    """Token ids, float32 parameters (C's table order and shapes) and masks."""
    ids = []
    for n in c["lengths"]:
        ids += [1] + list(rng.randint(0, c["V"], n - 1))
    N, Z = len(ids), c["D"] + c["H"] * c["VD"]
    shapes = [("embedding", (c["V"], c["D"])), ("query", (c["H"], c["D"], c["KD"])),
              ("key", (c["H"], c["D"], c["KD"])), ("value", (c["H"], c["D"], c["VD"])),
              ("distance", (c["H"], c["W"])), ("hidden.weight", (c["HID"], Z)), ("hidden.bias", (c["HID"],)),
              ("output.weight", (c["V"], c["HID"])), ("output.bias", (c["V"],))]
    params = {k: (rng.standard_normal(s) * 0.7).astype(np.float32) for k, s in shapes}
    hidden_mask = (rng.uniform(size=(N, Z)) >= c["p_hidden"]).astype(np.uint8)
    attention_mask = (rng.uniform(size=(c["H"], N, N)) >= c["p_attention"]).astype(np.uint8)
    return ids, params, hidden_mask, attention_mask


def loss_of(c, ids, t, hidden_mask, attention_mask):
    """Mean cross-entropy over predicted positions of the dropped network."""
    starts = np.cumsum([0] + c["lengths"])
    keep_z = torch.tensor(hidden_mask, dtype=torch.float64) / (1 - c["p_hidden"])
    keep_a = torch.tensor(attention_mask, dtype=torch.float64) / (1 - c["p_attention"])
    losses = []
    for s in range(len(c["lengths"])):
        a, b = int(starts[s]), int(starts[s + 1])
        x = torch.tensor(ids[a:b])
        r = t["embedding"][x]                                    # (T, D)
        T = b - a
        heads = []
        for h in range(c["H"]):
            q, k, v = r @ t["query"][h], r @ t["key"][h], r @ t["value"][h]
            scores = q @ k.T / c["KD"] ** 0.5
            back = torch.arange(T)[:, None] - torch.arange(T)[None, :]   # t - u
            readable = (back >= 0) & (back < c["W"])
            scores = scores + t["distance"][h][back.clamp(0, c["W"] - 1)]
            w = torch.softmax(scores.masked_fill(~readable, float("-inf")), dim=1)
            w = w * keep_a[h, a:b, a:b]
            heads.append(w @ v)
        z = torch.cat([r] + heads, dim=1) * keep_z[a:b]
        y = torch.tanh(z @ t["hidden.weight"].T + t["hidden.bias"])
        logits = y @ t["output.weight"].T + t["output.bias"]
        losses.append(torch.nn.functional.cross_entropy(logits[:-1], x[1:], reduction="none"))
    return torch.cat(losses).mean()


def run_case(c, rng):
    ids, params, hidden_mask, attention_mask = make_case(c, rng)
    t = {k: torch.tensor(v, dtype=torch.float64, requires_grad=True) for k, v in params.items()}
    loss = loss_of(c, ids, t, hidden_mask, attention_mask)
    loss.backward()
    return {"config": {k: c[k] for k in ("V", "D", "H", "KD", "VD", "W", "HID")}, "lengths": c["lengths"],
            "p_hidden": c["p_hidden"], "p_attention": c["p_attention"], "tokens": [int(i) for i in ids],
            "hidden_mask": hidden_mask.ravel().tolist(), "attention_mask": attention_mask.ravel().tolist(),
            "params": {k: [float(x) for x in v.ravel()] for k, v in params.items()},
            "loss": float(loss), "grads": {k: [float(x) for x in v.grad.numpy().ravel()] for k, v in t.items()}}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default="tests/fixtures/dropout.json")
    ap.add_argument("--check", action="store_true", help="compare with the file there instead of writing it")
    args = ap.parse_args()
    torch.set_num_threads(1)
    rng = np.random.RandomState(SEED)
    text = json.dumps({"cases": {c["name"]: run_case(c, rng) for c in CASES}}, indent=None) + "\n"
    if args.check:
        same = open(args.out).read() == text
        print("same" if same else "differs")
        return 0 if same else 1
    open(args.out, "w").write(text)
    print("wrote", args.out, len(text), "bytes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
