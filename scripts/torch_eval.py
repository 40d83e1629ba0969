#!/usr/bin/python3
"""Evaluate a storylm model with an independent PyTorch implementation of SPEC section 4.

    build/storylm stories STORIES --model M --ids > test_ids.txt
    /usr/bin/python3 scripts/torch_eval.py M test_ids.txt

The ids are the held-out test stories exactly as storylm reads them (one story a line,
[EOS] first and last). Prints the mean loss (nats per predicted token) and the top-1
accuracy, computed in float64 straight from the formulas, one story at a time, so that it
can be compared with `storylm eval STORIES --model M`. Needs torch (python3-torch).
"""
import math
import sys

import torch

sys.path.insert(0, __import__("os").path.dirname(__file__))
from read_safetensors import load  # noqa: E402


def story_logits(p, meta, x):
    """x: (T,) token ids -> (T, V) logits, float64."""
    rows = p["embedding"][x]                                  # (T, 32)
    T = x.shape[0]
    if meta["arch"] == "window8":
        C = int(meta["context"])
        pad = torch.cat([x[:1].repeat(C - 1), x])             # the story's first row before its start
        z = torch.stack([p["embedding"][pad[t:t + C]].reshape(-1) for t in range(T)])
    else:
        W = int(meta["window"])
        heads = []
        t_idx = torch.arange(T)
        dist = t_idx[:, None] - t_idx[None, :]                # (T, T) distance back
        visible = (dist >= 0) & (dist < W)
        for h in range(p["query"].shape[0]):
            q = rows @ p["query"][h]
            k = rows @ p["key"][h]
            v = rows @ p["value"][h]
            s = q @ k.T / math.sqrt(q.shape[1])
            s = s + p["distance"][h][dist.clamp(0, W - 1)]
            s = s.masked_fill(~visible, float("-inf"))
            heads.append(torch.softmax(s, dim=1) @ v)
        z = torch.cat([rows] + heads, dim=1)
    y = torch.tanh(z @ p["hidden.weight"].T + p["hidden.bias"])
    return y @ p["output.weight"].T + p["output.bias"]


def main(argv):
    if len(argv) != 3:
        sys.exit(__doc__)
    tensors, meta = load(argv[1])
    p = {k: torch.from_numpy(v.astype("float64")) for k, v in tensors.items()}
    total, correct, n = 0.0, 0, 0
    with open(argv[2]) as f:
        for line in f:
            x = torch.tensor([int(t) for t in line.split()])
            if x.numel() < 2:
                continue
            logits = story_logits(p, meta, x)[:-1]
            target = x[1:]
            total += torch.nn.functional.cross_entropy(logits, target, reduction="sum").item()
            correct += (logits.argmax(dim=1) == target).sum().item()
            n += target.numel()
    print(f"positions {n}\nloss      {total / n:.6f}\naccuracy  {correct / n:.6f}")


if __name__ == "__main__":
    main(sys.argv)
