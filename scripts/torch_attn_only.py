#!/usr/bin/python3
"""PyTorch reference for storylm's attention-only transformer (--arch
attn-only: TransformerLens's attn_only=True), from TransformerLens's
conventions as scripts/torch_transformer.py writes them (its LayerNorm,
Attention, rotary, ALiBi and Unembed, imported from there), with blocks of
attention alone: resid_post = resid_pre + attn(LN1(resid_pre)), no MLP and no
hook_resid_mid (TransformerLens's TransformerBlock with attn_only).

    /usr/bin/python3 scripts/torch_attn_only.py [--out tests/fixtures] [--check]

Writes tests/fixtures/attn_only.json (loss, every gradient, and the first
story's activations under every hook name TransformerLens has for it) for 2 blocks and the
absolute, rope, alibi and none schemes, on the same tiny case as the
transformer's fixture (vocabulary 13, d_model 8, 2 heads of d_head 4, n_ctx 6,
stories of 5 and 15 tokens); tests/test_attn_only.c reads it, so the tests
never need torch. Running it again rewrites the file byte for byte; --check
only compares.
"""
import argparse
import json
import os
import sys

import numpy as np
import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from torch_transformer import D, DH, EOS, H, LAYERS, LENGTHS, NCTX, V, attention, hook_values, layer_norm  # noqa: E402

SEED = 20261205
CASES = ["absolute", "rope", "alibi", "none"]


def tensor_shapes(pos):
    """(name, shape) in storylm's table order (attn_only.c's layout)."""
    t = [("embed.W_E", (V, D))]
    if pos == "absolute":
        t.append(("pos_embed.W_pos", (NCTX, D)))
    for l in range(LAYERS):
        b = "blocks.%d." % l
        t += [(b + "ln1.w", (D,)), (b + "ln1.b", (D,)), (b + "attn.W_Q", (H, D, DH)), (b + "attn.W_K", (H, D, DH)),
              (b + "attn.W_V", (H, D, DH)), (b + "attn.b_Q", (H, DH)), (b + "attn.b_K", (H, DH)),
              (b + "attn.b_V", (H, DH)), (b + "attn.W_O", (H, DH, D)), (b + "attn.b_O", (D,))]
    t += [("ln_final.w", (D,)), ("ln_final.b", (D,)), ("unembed.W_U", (D, V)), ("unembed.b_U", (V,))]
    return t


def make_params(rng, pos):
    p = {}
    for name, shape in tensor_shapes(pos):
        x = rng.normal(0.0, 0.5, size=shape)
        if name.endswith(".w"):
            x = 1.0 + 0.3 * rng.normal(size=shape)
        p[name] = torch.tensor(x, dtype=torch.float64, requires_grad=True)
    return p


def story_loss_sum(p, ids, pos, hooks):
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
        hooks[b + "hook_resid_post"] = resid
    layer_norm(resid, p["ln_final.w"], p["ln_final.b"], hooks, "ln_final")
    logits = hooks["ln_final.hook_normalized"] @ p["unembed.W_U"] + p["unembed.b_U"]
    hooks["hook_logits"] = logits
    return F.cross_entropy(logits[:-1], torch.tensor(ids[1:]), reduction="sum")


def build():
    rng = np.random.RandomState(SEED)
    stories = [[EOS] + [int(x) for x in rng.randint(0, V, size=n - 1)] for n in LENGTHS]
    n_predicted = sum(n - 1 for n in LENGTHS)
    cases = []
    for pos in CASES:
        p = make_params(rng, pos)
        hooks = [{} for _ in stories]
        loss = sum(story_loss_sum(p, ids, pos, h) for ids, h in zip(stories, hooks)) / n_predicted
        loss.backward()
        tensors = [{"name": name, "shape": list(shape), "value": [float(x) for x in p[name].detach().flatten()],
                    "grad": [float(x) for x in p[name].grad.flatten()]} for name, shape in tensor_shapes(pos)]
        first = hook_values(hooks[0])
        cases.append({"pos": pos, "loss": float(loss), "tensors": tensors, "hooks": first})
    return {"config": {"arch": "attn-only", "vocab_size": V, "d_model": D, "n_heads": H, "d_head": DH, "n_ctx": NCTX,
                       "n_layers": LAYERS},
            "stories": stories, "cases": cases}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "..", "tests", "fixtures"))
    ap.add_argument("--check", action="store_true", help="compare with the file instead of writing it")
    args = ap.parse_args()
    text = json.dumps(build(), indent=0, sort_keys=True) + "\n"
    path = os.path.join(args.out, "attn_only.json")
    if args.check:
        same = open(path).read() == text
        print("%s: %s" % (path, "the same" if same else "DIFFERENT"))
        return 0 if same else 1
    with open(path + ".tmp", "w") as f:
        f.write(text)
    os.replace(path + ".tmp", path)
    print("wrote %s (%d cases)" % (path, len(CASES)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
