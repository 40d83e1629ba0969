#!/usr/bin/python3
"""PyTorch reference for storylm's patch and attribute verbs: the chapter's plain model
(models/tinystories-plain.safetensors) written again in PyTorch, whole-sequence and
in float64, with activation patching and attribution done the textbook way
(patched tensors substituted into a full forward pass, gradients by autograd).

    /usr/bin/python3 scripts/torch_interp.py [--model M] [--out tests/fixtures/interp.json]

Writes the JSON fixture that tests/e2e_interp.sh compares storylm with, so the
tests never need torch. Deterministic: running it again rewrites the same file.

Independent of storylm's C code: the texts are tokenised here (BERT's basic
lower-casing and punctuation split, then greedy longest-match WordPiece with the
model's vocabulary, enough for the plain ASCII texts used); a row patch sets
the clean row and recomputes every query, key and value from the rows; the
attention is the masked T x T softmax with the distance scores added.
"""
import argparse
import json
import math
import os
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from read_safetensors import load  # noqa: E402

PATCH_CASES = [
    ("Mia went to the park with her dog, Max. Max ran after the ball and brought it back to",
     "Mia went to the park with her dog, Tom. Tom ran after the ball and brought it back to", None, None),
    ("Lily and Ben played with a ball. Lily threw the ball to",
     "Lily and Ben played with a ball. Ben threw the ball to", "ben", "lily"),
]
ATTRIBUTE_CASES = [
    ("Mia went to the park with her dog, Max. Max ran after the ball and brought it back to", -1, None),
    ("Once upon a time, there was a little girl named Lily. She loved to play in the park", 5, "little"),
]


def tokenize(text, vocab):
    ids = {p: i for i, p in enumerate(vocab)}
    words, word = [], ""
    for ch in text.lower():
        if ch.isspace() or (not ch.isalnum()):
            if word:
                words.append(word)
            word = ""
            if not ch.isspace():
                words.append(ch)
        else:
            word += ch
    if word:
        words.append(word)
    out = [ids["[EOS]"]]
    for w in words:
        start, pieces = 0, []
        while start < len(w):
            end = len(w)
            while end > start and (w[start:end] if start == 0 else "##" + w[start:end]) not in ids:
                end -= 1
            if end == start:
                pieces = [ids["[UNK]"]]
                break
            pieces.append(ids[w[start:end] if start == 0 else "##" + w[start:end]])
            start = end
        out.extend(pieces)
    return out


class Net:
    def __init__(self, t):
        f = lambda name: torch.tensor(t[name].astype(np.float64))  # noqa: E731
        self.E, self.Wq, self.Wk, self.Wv = f("embedding"), f("query"), f("key"), f("value")
        self.dist, self.W1, self.b1, self.W2, self.b2 = (f("distance"), f("hidden.weight"), f("hidden.bias"),
                                                          f("output.weight"), f("output.bias"))
        self.H, self.KD, self.W = self.Wq.shape[0], self.Wq.shape[2], self.dist.shape[1]

    def qkv(self, rows):
        """rows (T, D) -> q, k (H, T, 8), v (H, T, 16)."""
        return (torch.einsum("td,hdk->htk", rows, self.Wq), torch.einsum("td,hdk->htk", rows, self.Wk),
                torch.einsum("td,hdk->htk", rows, self.Wv))

    def attention(self, q, k):
        T = q.shape[1]
        t = torch.arange(T).view(T, 1)
        u = torch.arange(T).view(1, T)
        back = t - u
        ok = (back >= 0) & (back < self.W)
        s = torch.einsum("htk,huk->htu", q, k) / math.sqrt(self.KD)
        s = s + self.dist[:, back.clamp(0, self.W - 1)]
        return torch.softmax(s.masked_fill(~ok, float("-inf")), dim=-1)

    def forward(self, rows, q, k, v):
        """Every position's z (T, 160) and logits (T, V)."""
        o = torch.einsum("htu,huc->htc", self.attention(q, k), v)
        z = torch.cat([rows] + [o[h] for h in range(self.H)], dim=1)
        return z, self.above(z)

    def above(self, z):
        return torch.tanh(z @ self.W1.T + self.b1) @ self.W2.T + self.b2

    def run(self, ids):
        rows = self.E[torch.tensor(ids)]
        q, k, v = self.qkv(rows)
        return rows, q, k, v


def patch_case(net, vocab, clean_text, corrupt_text, answer, wrong):
    """answer, wrong: pieces, or None for the defaults (the clean run's top guess, the corrupt run's other)."""
    ci, xi = tokenize(clean_text, vocab), tokenize(corrupt_text, vocab)
    assert len(ci) == len(xi), (clean_text, corrupt_text)
    T = len(ci)
    clean, corrupt = net.run(ci), net.run(xi)
    cl, xl = net.forward(*clean)[1][-1], net.forward(*corrupt)[1][-1]
    answer = int(torch.argmax(cl)) if answer is None else vocab.index(answer)
    masked = xl.clone()
    masked[answer] = float("-inf")
    wrong = int(torch.argmax(masked)) if wrong is None else vocab.index(wrong)
    ld = lambda logits: float(logits[answer] - logits[wrong])  # noqa: E731
    lc, lx = ld(cl), ld(xl)
    norm = lambda logits: (ld(logits) - lx) / (lc - lx)  # noqa: E731

    def with_heads(pieces):
        """pieces: (h, what, u) with what in q (query at the last position), kv."""
        rows, q, k, v = [x.clone() for x in corrupt]
        for h, what, u in pieces:
            if what == "q":
                q[h, T - 1] = clean[1][h, T - 1]
            else:
                k[h, u], v[h, u] = clean[2][h, u], clean[3][h, u]
        return norm(net.forward(rows, q, k, v)[1][-1])

    def with_rows(us):
        rows = corrupt[0].clone()
        for u in us:
            rows[u] = clean[0][u]
        return norm(net.forward(rows, *net.qkv(rows))[1][-1])

    H = net.H
    reads = [[with_heads([(h, "kv", u)]) for u in range(T)] for h in range(H)]
    query = [with_heads([(h, "q", 0)]) for h in range(H)]
    output = [with_heads([(h, "q", 0)] + [(h, "kv", u) for u in range(T)]) for h in range(H)]
    rows = [with_rows([u]) for u in range(T)]
    return {"clean": clean_text, "corrupt": corrupt_text, "clean_ids": ci, "corrupt_ids": xi,
            "answer": vocab[answer], "answer_id": answer, "wrong": vocab[wrong], "wrong_id": wrong,
            "clean_diff": lc, "corrupt_diff": lx, "reads": reads, "query": query, "output": output, "rows": rows,
            "all_rows": with_rows(range(T))}


def attribute_case(net, vocab, text, pos, token):
    ids = tokenize(text, vocab)
    T = len(ids)
    p = pos if pos >= 0 else T + pos
    z_all, logits = net.forward(*net.run(ids))
    tok = int(torch.argmax(logits[p])) if token is None else vocab.index(token)
    z = z_all[p].clone().requires_grad_(True)
    logit = net.above(z)[tok]
    logit.backward()
    D, VD = net.E.shape[1], net.Wv.shape[2]
    parts = [(0, D)] + [(D + h * VD, D + (h + 1) * VD) for h in range(net.H)]
    gxa, zero = [], []
    for a, b in parts:
        gxa.append(float((z.grad[a:b] * z[a:b]).sum()))
        removed = z.detach().clone()
        removed[a:b] = 0
        zero.append(float(logit) - float(net.above(removed)[tok]))
    logp = torch.log_softmax(logits, dim=-1)
    surprisal = [float(-logp[t, ids[t + 1]]) for t in range(T - 1)]
    return {"text": text, "pos": pos, "ids": ids, "token": vocab[tok], "token_id": tok, "logit": float(logit),
            "grad_x_act": gxa, "zero": zero, "surprisal": surprisal}


def main():
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default=os.path.join(root, "models", "tinystories-plain.safetensors"))
    ap.add_argument("--out", default=os.path.join(root, "tests", "fixtures", "interp.json"))
    args = ap.parse_args()
    torch.set_num_threads(1)
    tensors, meta = load(args.model)
    vocab = meta["vocab"].split("\n")
    net = Net(tensors)
    with torch.no_grad():
        patches = [patch_case(net, vocab, *c) for c in PATCH_CASES]
    fixture = {"model": "models/tinystories-plain.safetensors", "run_id": meta.get("run_id", ""),
               "patch": patches, "attribute": [attribute_case(net, vocab, *c) for c in ATTRIBUTE_CASES]}
    with open(args.out, "w") as f:
        json.dump(fixture, f, indent=1, sort_keys=True)
        f.write("\n")
    print(f"torch_interp.py: wrote {args.out}", file=sys.stderr)


if __name__ == "__main__":
    main()
