# The chapter's attention network in PyTorch, in the page's five parts (the
# page shows the regions marked "page:" beside the C the server runs): the
# weights, the attention forward, the hidden layer, the output and loss, the
# backward and Adam's step. It reads a storylm model file (safetensors) with
# nothing but torch, so its numbers can be checked against storylm's:
#   python3 attention_network.py MODEL "lily found a shell ." [STEPS]
# prints the loss on the pieces (storylm eval --text gives the same), then the
# loss after each Adam step on them. tests/e2e_torch_network.sh runs it.
import json
import struct
import sys

import torch

# page: weights
def load(path):
    """Every tensor of a storylm model file, by name (as storylm info lists them)."""
    raw = open(path, "rb").read()
    n = struct.unpack("<Q", raw[:8])[0]
    head = json.loads(raw[8:8 + n])
    meta = head.pop("__metadata__")
    tensors = {k: torch.frombuffer(bytearray(raw[8 + n + v["data_offsets"][0]:8 + n + v["data_offsets"][1]]),
                                   dtype=torch.float32).reshape(v["shape"]).requires_grad_() for k, v in head.items()}
    return tensors, meta["vocab"].split("\n")
# page: end


# page: attention forward
def attention(t, rows):
    """rows (T, 32) -> each head's blend of values (T, 8 * 16)."""
    T = rows.shape[0]
    back = torch.arange(T)[:, None] - torch.arange(T)[None, :]          # distance back, (T, T)
    unread = (back < 0) | (back > 255)                                  # a later token, or past the window
    heads = []
    for h in range(8):
        q, k, v = rows @ t["query"][h], rows @ t["key"][h], rows @ t["value"][h]   # (T, 8), (T, 8), (T, 16)
        scores = q @ k.T / 8 ** 0.5 + t["distance"][h][back.clamp(0, 255)]         # compare, plus the distance score
        weights = torch.softmax(scores.masked_fill(unread, float("-inf")), -1)     # weigh
        heads.append(weights @ v)                                                  # blend
    return torch.cat(heads, -1)
# page: end


# page: hidden layer
def hidden(t, ids):
    """ids (T) -> the hidden layer (T, 128): the token's row beside the 8 heads' results, 160 numbers."""
    rows = t["embedding"][ids]
    z = torch.cat([rows, attention(t, rows)], -1)
    return torch.tanh(z @ t["hidden.weight"].T + t["hidden.bias"])
# page: end


# page: output and loss
def loss_of(t, ids):
    """The mean of -log p(next token) over every position that has one."""
    logits = hidden(t, ids) @ t["output.weight"].T + t["output.bias"]       # (T, 2000)
    return torch.nn.functional.cross_entropy(logits[:-1], ids[1:])
# page: end


def main():
    t, vocab = load(sys.argv[1])
    ids = torch.tensor([vocab.index("[EOS]")] + [vocab.index(p) for p in sys.argv[2].split()])
    steps = int(sys.argv[3]) if len(sys.argv) > 3 else 0
    # page: adam step
    adam = torch.optim.Adam(t.values(), lr=0.003)
    # page: end
    print("loss %.6f" % loss_of(t, ids).item())
    for step in range(steps):
        # page: backward
        adam.zero_grad()
        loss = loss_of(t, ids)
        loss.backward()                 # every weight's gradient, the attention's included
        # page: end
        adam.step()
        print("step %d loss %.6f" % (step + 1, loss_of(t, ids).item()))


if __name__ == "__main__":
    main()
