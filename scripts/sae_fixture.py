#!/usr/bin/env python3
"""Writes tests/fixtures/sae.json: one step of a TopK SAE (with AuxK on dead
latents) and one of an L1 SAE in PyTorch, float64 on float32-rounded inputs:
the inputs, the parameters in SAELens's names, the losses and the gradient of
each parameter. tests/test_sae.c reads it and checks storylm's passes against
it. Run: /usr/bin/python3 scripts/sae_fixture.py > tests/fixtures/sae.json"""
import json
import sys

import torch

AUX_COEFF = 1.0 / 32  # OpenAI's alpha


def forward(kind, x, W_enc, b_enc, W_dec, b_dec, k, k_aux, dead, l1_coeff):
    """The losses of one batch, written from SAELens's and OpenAI's definitions."""
    x_cent = x - b_dec
    pre = x_cent @ W_enc + b_enc
    if kind == "topk":
        vals, idx = pre.topk(k, dim=-1)
        z = torch.zeros_like(pre).scatter(-1, idx, torch.relu(vals))
    else:
        z = torch.relu(pre)
    x_hat = z @ W_dec + b_dec
    mse = (x_hat - x).pow(2).sum(-1).mean()
    aux = torch.zeros((), dtype=x.dtype)
    l1 = torch.zeros((), dtype=x.dtype)
    n_dead = int(dead.sum())
    if kind == "topk" and n_dead > 0:
        residual = (x - x_hat).detach()
        kk = min(k_aux, n_dead)
        masked = torch.where(dead, pre, torch.full_like(pre, -float("inf")))
        vals, idx = masked.topk(kk, dim=-1)
        z_aux = torch.zeros_like(pre).scatter(-1, idx, torch.relu(vals))
        e_hat = z_aux @ W_dec  # b_dec counted once: the residual holds it
        aux = AUX_COEFF * min(n_dead / k_aux, 1.0) * (e_hat - residual).pow(2).sum(-1).mean()
    if kind == "l1":
        l1 = l1_coeff * (z * W_dec.norm(dim=1)).sum(-1).mean()
    return mse, aux, l1


def case(kind, seed):
    g = torch.Generator().manual_seed(seed)
    d_in, d_sae, k, B = 8, 24, 4, 6
    k_aux = d_in // 2

    def rnd(*shape, scale=1.0):
        return (torch.randn(*shape, generator=g) * scale).float().double()

    W_dec = rnd(d_sae, d_in, scale=0.3)
    W_enc = (W_dec.t() + rnd(d_in, d_sae, scale=0.1)).contiguous()
    b_enc = rnd(d_sae, scale=0.1)
    b_dec = rnd(d_in, scale=0.1)
    x = rnd(B, d_in)
    dead = torch.zeros(d_sae, dtype=torch.bool)
    dead[::3] = True
    params = {"W_enc": W_enc, "b_enc": b_enc, "W_dec": W_dec, "b_dec": b_dec}
    for p in params.values():
        p.requires_grad_(True)
    l1_coeff = 0.7
    mse, aux, l1 = forward(kind, x, W_enc, b_enc, W_dec, b_dec, k, k_aux, dead, l1_coeff)
    loss = mse + aux + l1
    loss.backward()
    flat = lambda t: [float(v) for v in t.detach().reshape(-1)]
    return {
        "kind": kind, "d_in": d_in, "d_sae": d_sae, "k": k, "k_aux": k_aux, "batch": B,
        "l1_coeff": l1_coeff, "x": flat(x), "dead": [int(v) for v in dead],
        "mse": float(mse), "aux": float(aux), "l1": float(l1), "loss": float(loss),
        "tensors": [{"name": n, "value": flat(p), "grad": flat(p.grad)} for n, p in params.items()],
    }


json.dump({"torch": torch.__version__, "cases": [case("topk", 1), case("l1", 2)]}, sys.stdout)
sys.stdout.write("\n")
