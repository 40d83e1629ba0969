"""The numpy reader of docs/sae.md (the lines between the markers are the
page's), run by tests/e2e_sae.sh: reads an SAE folder and storylm cache's
activations of the held-out stories, encodes and decodes them, and prints
explained variance, L0 and MSE as JSON, to compare with storylm sae eval --json.
usage: sae_reader.py DIR CACHE.safetensors"""
import json
import struct
import sys

import numpy as np

DIR, CACHE = sys.argv[1], sys.argv[2]

# ---- docs/sae.md ----
def load(path):  # a safetensors file of F32 tensors, as numpy arrays
    b = open(path, "rb").read()
    n = struct.unpack("<Q", b[:8])[0]
    header = {k: v for k, v in json.loads(b[8:8 + n]).items() if k != "__metadata__"}
    return {k: np.frombuffer(b[8 + n + v["data_offsets"][0]:8 + n + v["data_offsets"][1]], "<f4").reshape(v["shape"])
            for k, v in header.items()}

cfg, w = json.load(open(f"{DIR}/cfg.json")), load(f"{DIR}/sae_weights.safetensors")

def encode(x):  # x [tokens, d_in] -> z [tokens, d_sae]
    pre = (x - w["b_dec"]) @ w["W_enc"] + w["b_enc"]
    if cfg["architecture"] == "topk":  # each row's k largest, the rest 0
        keep = np.argpartition(-pre, cfg["k"] - 1, axis=-1)[:, :cfg["k"]]
        z = np.zeros_like(pre)
        np.put_along_axis(z, keep, np.take_along_axis(pre, keep, -1), -1)
        pre = z
    if cfg["architecture"] == "jumprelu":  # a trained BatchTopK: a latent where it passes its threshold
        pre = pre * (pre > w["threshold"])
    return np.maximum(pre, 0)

def decode(z):  # z [tokens, d_sae] -> x_hat [tokens, d_in]
    return z @ w["W_dec"] + w["b_dec"]
# ---- end ----

acts = load(CACHE)
hook = cfg["hook_name"]
if hook in acts:
    x = acts[hook]
elif hook == "hook_hidden":  # the chapter's network's cache names it "hidden"
    x = acts["hidden"]
else:  # blocks.L.hook_mlp_out: what the MLP adds to the residual stream
    layer = hook.split(".")[1]
    x = acts[f"blocks.{layer}.hook_resid_post"] - acts[f"blocks.{layer}.hook_resid_mid"]
x = x.reshape(x.shape[0], -1).astype(np.float64)
z = encode(x.astype(np.float32))
x_hat = decode(z).astype(np.float64)
err = ((x - x_hat) ** 2).sum()
total = ((x - x.mean(0)) ** 2).sum()
print(json.dumps({"explained_variance": 1 - err / total, "l0": float((z > 0).sum(1).mean()),
                  "mse": err / x.size, "tokens": int(x.shape[0])}))
