#!/usr/bin/python3
"""PyTorch reference for storylm's network (SPEC section 4), the way llm.c checks
its C code: the same network written independently in PyTorch, run on a small
deterministic case at the real sizes, its results written as test fixtures.

    /usr/bin/python3 scripts/torch_reference.py [--out tests/fixtures] [--check]

Writes tests/fixtures/reference.bin (raw little-endian float32 and int32) and
tests/fixtures/reference.json (what lies where in it, the case, the expected
losses). tests/test_reference.c reads them, so the tests never need torch.
Running the script again rewrites both files byte for byte (numpy's seeded
RandomState, float64 on one thread). --check only compares with the files there.

The case: 3 stories of 300, 40 and 7 tokens packed in one batch (the first
longer than the 256-token window), random ids, [EOS] (id 1) first. Parameters:
embedding N(0, 1), query/key/value U(+-0.3) (large enough that attention is far
from even), distance scores N(0, 1) (so that a mix-up of distances shows),
dense layers U(+-1/sqrt(fan_in)). window8 shares the embedding and the output
layer and has its own hidden layer. Expected values are computed in float64
from the float32 parameters; after 3 Adam steps (lr 1e-3, betas 0.9/0.999,
eps 1e-8) on the same batch, the parameters too. Two ablations of the
attention network (heads 2 and 5 to zero; heads 0 and 7 to given means) add
their losses and the gradients of every tensor but the two big ones. Last,
Adam alone: 64 parameters, 3 steps with given gradients from 1e-12 to 1.
"""
import argparse
import json
import math
import os
import sys

import numpy as np
import torch

V, D, H, KD, VD, W, HID, CTX = 2000, 32, 8, 8, 16, 256, 128, 8
EOS = 1
LENGTHS = [300, 40, 7]
LR, ADAM_STEPS = 1e-3, 3
SEED = 20240601
ABLATIONS = [
    {"name": "zero_2_5", "heads": [2, 5], "mode": "zero"},
    {"name": "mean_0_7", "heads": [0, 7], "mode": "mean"},
]
SMALL_TENSORS = ["query", "key", "value", "distance", "hidden.weight", "hidden.bias", "output.bias"]


def make_case(rng):
    """Token ids of the stories and float32 parameters of both networks."""
    stories = []
    for n in LENGTHS:
        ids = rng.randint(0, V, size=n).astype(np.int32)
        ids[0] = EOS
        stories.append(ids)

    def uniform(shape, bound):
        return rng.uniform(-bound, bound, size=shape).astype(np.float32)

    shared = {"embedding": rng.normal(0.0, 1.0, size=(V, D)).astype(np.float32)}
    attention = {
        "query": uniform((H, D, KD), 0.3),
        "key": uniform((H, D, KD), 0.3),
        "value": uniform((H, D, VD), 0.3),
        "distance": rng.normal(0.0, 1.0, size=(H, W)).astype(np.float32),
        "hidden.weight": uniform((HID, D + H * VD), 1 / math.sqrt(D + H * VD)),
        "hidden.bias": uniform((HID,), 1 / math.sqrt(D + H * VD)),
    }
    window8 = {
        "hidden.weight": uniform((HID, CTX * D), 1 / math.sqrt(CTX * D)),
        "hidden.bias": uniform((HID,), 1 / math.sqrt(CTX * D)),
    }
    shared["output.weight"] = uniform((V, HID), 1 / math.sqrt(HID))
    shared["output.bias"] = uniform((V,), 1 / math.sqrt(HID))
    head_mean = rng.normal(0.0, 0.3, size=(H, VD)).astype(np.float32)
    order_a = ["embedding", "query", "key", "value", "distance", "hidden.weight", "hidden.bias",
               "output.weight", "output.bias"]
    order_w = ["embedding", "hidden.weight", "hidden.bias", "output.weight", "output.bias"]
    params_a = {k: (attention.get(k) if k in attention else shared[k]) for k in order_a}
    params_w = {k: (window8.get(k) if k in window8 else shared[k]) for k in order_w}
    return stories, params_a, params_w, head_mean


def attention_z(p, ids, ablation=None, head_mean=None):
    """One story (T ids) -> z (T, 160): row, then heads 0..7."""
    T = len(ids)
    rows = p["embedding"][torch.as_tensor(ids, dtype=torch.long)]  # (T, D)
    q = torch.einsum("td,hdk->htk", rows, p["query"])  # (H, T, KD)
    k = torch.einsum("td,hdk->htk", rows, p["key"])
    v = torch.einsum("td,hdk->htk", rows, p["value"])  # (H, T, VD)
    t = torch.arange(T).view(T, 1)
    u = torch.arange(T).view(1, T)
    back = t - u  # distance back from position t to key u
    visible = (back >= 0) & (back < W)
    dist = p["distance"][:, back.clamp(0, W - 1)]  # (H, T, T)
    scores = q @ k.transpose(1, 2) / math.sqrt(KD) + dist
    scores = scores.masked_fill(~visible, float("-inf"))
    att = torch.softmax(scores, dim=-1)
    out = att @ v  # (H, T, VD)
    heads = []
    for h in range(H):
        o = out[h]
        if ablation and h in ablation["heads"]:
            if ablation["mode"] == "zero":
                o = torch.zeros_like(o)
            else:
                o = head_mean[h].view(1, VD).expand(T, VD)
        heads.append(o)
    return torch.cat([rows] + heads, dim=1)


def window8_z(p, ids):
    """One story (T ids) -> z (T, 256): rows of x_{t-7}..x_t, x_0's row before the start."""
    T = len(ids)
    idx = torch.arange(T).view(T, 1) - (CTX - 1) + torch.arange(CTX).view(1, CTX)
    tok = torch.as_tensor(ids, dtype=torch.long)[idx.clamp(min=0)]  # (T, CTX)
    return p["embedding"][tok].reshape(T, CTX * D)


def forward(arch, p, stories, ablation=None, head_mean=None):
    """Mean cross-entropy over every predicted position, and per-position losses (0 at story ends)."""
    losses = []
    for ids in stories:
        z = attention_z(p, ids, ablation, head_mean) if arch == "attention" else window8_z(p, ids)
        y = torch.tanh(z @ p["hidden.weight"].T + p["hidden.bias"])
        logits = y @ p["output.weight"].T + p["output.bias"]
        target = torch.as_tensor(ids[1:], dtype=torch.long)
        per = torch.nn.functional.cross_entropy(logits[:-1], target, reduction="none")
        losses.append(torch.cat([per, per.new_zeros(1)]))
    per_position = torch.cat(losses)
    n_predicted = sum(len(s) - 1 for s in stories)
    return per_position.sum() / n_predicted, per_position


def to_torch(params, dtype):
    return {k: torch.tensor(v, dtype=dtype, requires_grad=True) for k, v in params.items()}


def loss_and_grads(arch, params, stories, dtype, ablation=None, head_mean=None):
    p = to_torch(params, dtype)
    mean = None if head_mean is None else torch.tensor(head_mean, dtype=dtype)
    loss, per_position = forward(arch, p, stories, ablation, mean)
    loss.backward()
    return loss.item(), per_position.detach().numpy(), {k: t.grad.numpy() for k, t in p.items()}


def adam_steps(arch, params, stories, dtype):
    """Parameters after ADAM_STEPS plain Adam steps, each on the same batch."""
    p = to_torch(params, dtype)
    opt = torch.optim.Adam(list(p.values()), lr=LR, betas=(0.9, 0.999), eps=1e-8)
    for _ in range(ADAM_STEPS):
        opt.zero_grad()
        loss, _ = forward(arch, p, stories)
        loss.backward()
        opt.step()
    return {k: t.detach().numpy() for k, t in p.items()}


class Blob:
    """Arrays laid end to end in one little-endian file, indexed by name."""

    def __init__(self):
        self.parts, self.offset, self.index, self.seen = [], 0, {}, {}

    def add(self, name, array, dtype):
        data = np.ascontiguousarray(array, dtype=dtype).astype(np.dtype(dtype).newbyteorder("<"))
        raw = data.tobytes()
        key = (raw, data.shape, dtype)
        if key in self.seen:  # shared tensors (embedding, output) are stored once
            self.index[name] = dict(self.index[self.seen[key]])
            return
        self.seen[key] = name
        self.index[name] = {"dtype": "f32" if dtype == np.float32 else "i32", "shape": list(data.shape),
                            "offset": self.offset}
        self.parts.append(raw)
        self.offset += len(raw)

    def bytes(self):
        return b"".join(self.parts)


def adam_alone(rng):
    """Adam by itself: torch.optim.Adam on 64 parameters fed given gradients
    spanning 1e-12 to 1 (zeros and sign changes too), so that the C code's
    handling of eps and of the bias corrections is pinned down exactly."""
    p0 = rng.normal(0.0, 1.0, size=64).astype(np.float32)
    scale = 10.0 ** rng.uniform(-12, 0, size=(ADAM_STEPS, 64))
    grads = (rng.choice([-1.0, 1.0], size=(ADAM_STEPS, 64)) * scale).astype(np.float32)
    grads[:, :4] = 0.0
    grads[1, 4:8] = 0.0
    p = torch.tensor(p0, dtype=torch.float64, requires_grad=True)
    opt = torch.optim.Adam([p], lr=LR, betas=(0.9, 0.999), eps=1e-8)
    after = []
    for step in range(ADAM_STEPS):
        p.grad = torch.tensor(grads[step], dtype=torch.float64)
        opt.step()
        after.append(p.detach().numpy().copy())
    return p0, grads, np.stack(after)


def float32_agreement(arch, params, stories, grads64, adam64):
    """How far float32 PyTorch lands from float64: the precision a float32 C code can be held to."""
    _, _, grads32 = loss_and_grads(arch, params, stories, torch.float32)
    adam32 = adam_steps(arch, params, stories, torch.float32)
    g = max(float(np.abs(grads32[k] - grads64[k]).max() / max(np.abs(grads64[k]).max(), 1e-30)) for k in grads64)
    a = max(float(np.abs(adam32[k] - adam64[k]).max()) for k in adam64)
    return g, a


def build(report):
    torch.set_num_threads(1)  # one thread: sums in one order, files byte for byte
    rng = np.random.RandomState(SEED)
    stories, params_a, params_w, head_mean = make_case(rng)
    blob = Blob()
    meta = {"format": "storylm torch reference", "version": 1, "vocab_size": V, "row_dim": D, "n_heads": H,
            "key_dim": KD, "value_dim": VD, "window": W, "hidden_dim": HID, "context": CTX, "eos": EOS,
            "lengths": LENGTHS, "lr": LR, "adam_steps": ADAM_STEPS, "adam": [0.9, 0.999, 1e-8],
            "torch": torch.__version__, "cases": {}}
    blob.add("tokens", np.concatenate(stories), np.int32)
    blob.add("head_mean", head_mean, np.float32)
    for arch, params in (("attention", params_a), ("window8", params_w)):
        loss, per_position, grads = loss_and_grads(arch, params, stories, torch.float64)
        adam = adam_steps(arch, params, stories, torch.float64)
        for k in params:
            blob.add(f"{arch}/params/{k}", params[k], np.float32)
            blob.add(f"{arch}/grads/{k}", grads[k], np.float32)
            blob.add(f"{arch}/adam/{k}", adam[k], np.float32)
        blob.add(f"{arch}/position_loss", per_position, np.float32)
        meta["cases"][arch] = {"loss": loss, "tensors": list(params)}
        g, a = float32_agreement(arch, params, stories, grads, adam)
        report(f"{arch}: loss {loss:.9f}; float32 torch vs float64: grads {g:.2e} of max, "
               f"params after Adam {a:.2e}")
    p0, grads, after = adam_alone(rng)
    blob.add("adam_alone/params", p0, np.float32)
    blob.add("adam_alone/grads", grads, np.float32)
    blob.add("adam_alone/after", after, np.float32)
    for ab in ABLATIONS:
        loss, _, grads = loss_and_grads("attention", params_a, stories, torch.float64, ab, head_mean)
        for k in SMALL_TENSORS:
            blob.add(f"ablation/{ab['name']}/grads/{k}", grads[k], np.float32)
        meta["cases"][ab["name"]] = {"loss": loss, "heads": ab["heads"], "mode": ab["mode"], "tensors": SMALL_TENSORS}
        report(f"ablation {ab['name']}: loss {loss:.9f}")
    meta["arrays"] = blob.index
    meta["bytes"] = blob.offset
    return blob.bytes(), (json.dumps(meta, indent=1, sort_keys=True) + "\n").encode()


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default=os.path.join(here, "..", "tests", "fixtures"))
    ap.add_argument("--check", action="store_true", help="compare with the files there instead of writing")
    args = ap.parse_args()
    data, index = build(lambda s: print(s, file=sys.stderr))
    paths = [os.path.join(args.out, "reference.bin"), os.path.join(args.out, "reference.json")]
    if args.check:
        same = all(open(p, "rb").read() == c for p, c in zip(paths, (data, index)))
        print("fixtures match" if same else "fixtures DIFFER", file=sys.stderr)
        return 0 if same else 1
    os.makedirs(args.out, exist_ok=True)
    for path, content in zip(paths, (data, index)):
        with open(path, "wb") as f:
            f.write(content)
    print(f"wrote {paths[0]} ({len(data)} bytes) and {paths[1]}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
